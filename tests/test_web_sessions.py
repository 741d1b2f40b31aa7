"""Issue 26, item 7: dashboard sessions live in the database. A login survives `kill -9` of
the scheduler process and its restart, and logging out or revoking the user still ends it
(real scheduler processes, SQLite)."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.cluster import Cluster, free_port
from tests.faults_support import restart_scheduler
from tests.test_web_api import Browserless


def test_a_login_survives_a_scheduler_kill_9_and_restart(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    http = free_port()
    args = ("--open-registration", "--http-listen", f"127.0.0.1:{http}")
    try:
        cluster.start_scheduler(*args)
        ann = cluster.add_user("ann")
        web = Browserless(http)
        logged_in = web._call("POST", "/api/v1/login", {"token": ann}, {})
        assert logged_in.status == 200, logged_in.body
        web.cookie = logged_in.headers["Set-Cookie"].split(";", 1)[0]
        csrf = logged_in.json()["csrf"]
        assert web._call("GET", "/api/v1/jobs", None, {}).status == 200

        cluster.kill("scheduler", signal.SIGKILL)
        restart_scheduler(cluster, *args)

        again = web._call("GET", "/api/v1/session", None, {})
        assert again.status == 200, again.body
        assert (again.json()["user"], again.json()["csrf"]) == ("ann", csrf)  # same session
        assert web._call("GET", "/api/v1/jobs", None, {}).status == 200
        out = web._call("POST", "/api/v1/logout", {}, {"X-CSRF-Token": csrf})
        assert out.status == 200
        assert web._call("GET", "/api/v1/jobs", None, {}).status == 401

        bob = cluster.add_user("bob")
        web.cookie = ""
        bob_in = web._call("POST", "/api/v1/login", {"token": bob}, {})
        web.cookie = bob_in.headers["Set-Cookie"].split(";", 1)[0]
        revoked = cluster.cli("gadmin", "user", "revoke", "bob")
        assert revoked.returncode == 0, revoked.stderr
        cluster.kill("scheduler", signal.SIGKILL)
        restart_scheduler(cluster, *args)
        refused = web._call("GET", "/api/v1/jobs", None, {})
        assert refused.status == 401 and "no longer current" in refused.json()["error"]
    finally:
        cluster.stop()
