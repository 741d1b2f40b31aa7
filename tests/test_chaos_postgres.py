"""Schedulers on PostgreSQL, killed with real processes.

A scheduler ``kill -9``ed during a burst of 200 submissions over the HTTP API (``POST
/api/v1/jobs``): every submission that got a job id is in the queue after the restart, once. The submissions are gsub's own (its ``_send``, 8
threads in this process: 200 gsub processes would take most of a minute on a busy machine),
given a gRPC address where nothing listens, so every id came over HTTP (one whose answer
was lost in the kill may be stored without an id: gsub's retry over gRPC fails here).

The leader of two ``--ha`` schedulers ``kill -9``ed under a ``grun --pty sh``: grun reaches
the standby that took over and the same shell goes on."""

from __future__ import annotations

import argparse
import dataclasses
import threading
import time
import uuid
from collections import Counter

import pytest

from rota.scheduler.core.users import UsersService
from rota.scheduler.store.store import Store
from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for
from tests.faults_support import add_node, config_file, restart_scheduler
from tests.postgres import postgres_url  # noqa: F401  (fixture)
from tests.terminal import Terminal
from tests.test_ha import Pair, db_url  # noqa: F401  (fixture)
from tests.test_ha import pair as pair  # the fixture

TOTAL = 200
CLIENTS = 8


def test_every_id_a_submission_got_survives_a_kill_9_mid_burst(
    cluster: Cluster,
    db_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rota.cli.errors import CliError
    from rota.cli.gsub import _send
    from rota.jobspec import parse_job_file

    http = f"127.0.0.1:{free_port()}"
    cluster.token = "set below"  # start_scheduler makes no SQLite admin
    args = ("--db", db_url, "--config", config_file(cluster), "--http-listen", http)
    cluster.start_scheduler(*args)
    store = Store(db_url)
    try:
        cluster.token = UsersService(store.users, time.time).add("root", True)[1]
    finally:
        store.close()
    add_node(cluster, "n1")  # jobs could run there: nothing runs, nothing ends
    for key, value in {**cluster.env, "ROTA_HTTP": http}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ROTA_SCHEDULER", f"127.0.0.1:{free_port()}")  # no gRPC: HTTP only
    spec = parse_job_file({"image": TEST_IMAGE, "command": ["sleep", "1"]})
    gsub = argparse.Namespace(scheduler=None, ca=None, test_only=False)
    got: dict[str, str] = {}  # request id -> job id
    refused: list[str] = []
    lock = threading.Lock()

    def submit(count: int) -> None:
        for _ in range(count):
            request = uuid.uuid4().hex
            try:
                named = dataclasses.replace(spec, name=request)
                (answer,) = _send(gsub, [(request, "burst", named)])
            except CliError as exc:
                with lock:
                    refused.append(str(exc))
                continue
            with lock:
                (got[request],) = answer["job_ids"]

    threads = [threading.Thread(target=submit, args=(TOTAL // CLIENTS,)) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    wait_for(lambda: len(got) >= TOTAL // 4, 60, 0.01, what="a quarter acknowledged")
    cluster.kill("scheduler")
    assert len(got) < TOTAL, "the kill came before the burst ended"
    restart_scheduler(cluster, *args)
    for t in threads:
        t.join(timeout=60)
    assert len(got) + len(refused) == TOTAL
    assert all("cannot reach the rota scheduler" in why for why in refused), refused

    jobs = [j for j in cluster.jobs() if j["state"] == "PENDING"]
    by_id = {j["id"]: j["name"] for j in jobs}
    assert len(set(got.values())) == len(got), "two submissions got the same id"
    for request, job_id in got.items():
        assert by_id.get(job_id) == request, f"job {job_id} ({request}) lost"
    assert set(Counter(j["name"] for j in jobs).values()) == {1}, "a submission stored twice"
    print(f"burst: {len(got)} acknowledged, {len(refused)} refused while it was down")


def test_grun_goes_on_with_the_same_shell_after_its_leader_is_killed(pair: Pair) -> None:
    cluster = pair.cluster
    node = cluster.node_name("n1")
    cluster.start_agent("n1", 0, "--scheduler", pair.addresses, wait=False)
    wait_for(lambda: (n := cluster.node(node)) and n["state"] != "DOWN", 30, what="node up")
    term = Terminal(["-m", "rota.cli.grun", "--image", TEST_IMAGE, "--pty", "sh"], cluster.env)
    try:
        term.expect(b"$ ")
        term.send(b"X=kept-$((6*7)); echo set-$X\r")
        term.expect(b"set-kept-42")
        cluster.kill("a")  # the leader grun's session goes through
        term.expect(b"grun: lost the scheduler at ")
        term.expect(b"grun: the scheduler is back: job 1 goes on", timeout=60)
        assert pair.leads("b")
        term.send(b"echo again-$X\r")
        term.expect(b"again-kept-42")
        term.send(b"exit 5\r")
        assert term.wait() == 5
    finally:
        term.close()
    job = cluster.wait_state("1", "FAILED")
    assert (job["exit_code"], job["attempt"], job["interactive"]) == (5, 1, True)
