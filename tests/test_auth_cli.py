"""Users and tokens end to end with real processes: gadmin user, the credentials file, USER
spoofing, another user's job, gqueue --me and gacct as the token's user, gadmin audit,
rota admin-token."""

from __future__ import annotations

import getpass
import json
import subprocess
import sys

from tests.cluster import TEST_IMAGE, Cluster

SLEEP = (
    f"image: {TEST_IMAGE}\ncommand: [sleep, '600']\nresources: {{gpus: 1}}\nenv: {{KEY: s3cret}}\n"
)


def test_users_tokens_credentials_and_audit(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", 1)
    made = cluster.cli("gadmin", "user", "add", "bob", "--parsable", check=True)
    bob_token = made.stdout.strip()
    creds = cluster.root / "config" / "rota" / "credentials"
    creds.parent.mkdir(parents=True, exist_ok=True)
    creds.write_text(bob_token + "\n")
    creds.chmod(0o644)
    admin = getpass.getuser()
    as_bob = {**cluster.env, "USER": admin, "LOGNAME": admin}
    del as_bob["ROTA_TOKEN"]

    def bob(*args: str) -> subprocess.CompletedProcess[str]:
        module = args[0]
        return subprocess.run(
            [sys.executable, "-m", f"rota.cli.{module}", *args[1:]],
            env=as_bob,
            capture_output=True,
            text=True,
        )

    loose = bob("gqueue")
    assert loose.returncode == 1 and "can be read by others" in loose.stderr
    assert len(loose.stderr.strip().splitlines()) == 1
    creds.chmod(0o600)
    job = cluster.submit(SLEEP)  # the admin (named after the OS user)
    job_path = cluster.write_job("mine.yaml", SLEEP)
    spoofed = bob("gsub", str(job_path), "--parsable")
    assert spoofed.returncode == 0, spoofed.stderr
    mine = spoofed.stdout.strip()
    shown = json.loads(bob("gqueue", "--json", "-t", "all").stdout)
    users = {j["id"]: j["user"] for j in shown}
    assert users[mine] == "bob", "USER=<the admin> does not make bob the admin"
    refused = bob("gcancel", job)
    assert refused.returncode == 1 and f"belongs to {admin}" in refused.stderr
    drain = bob("gadmin", "node", "drain", cluster.node_name("n1"), "--reason", "mine")
    assert drain.returncode == 1 and "admins only" in drain.stderr
    assert cluster.job(job)["state"] in ("PENDING", "CONFIGURING", "RUNNING")
    me = json.loads(bob("gqueue", "--me", "--json", "-t", "all").stdout)
    assert [j["id"] for j in me] == [mine], "--me is the token's user, whatever $USER says"

    assert bob("gcancel", mine).returncode == 0, "a user cancels their own job"
    cluster.cli("gcancel", job, check=True)
    for done in (job, mine):
        cluster.wait_state(done, "CANCELLED")
    seen = json.loads(bob("gacct", "-a", "--json").stdout)
    assert [r["id"] for r in seen] == [mine], "gacct shows a user only their own jobs"
    asked = json.loads(bob("gacct", "-u", admin, "--json").stdout)
    assert asked == [], "naming another user shows nothing of theirs"
    totals = json.loads(bob("gacct", "--summary", "--json").stdout)
    assert {(t["kind"], t["name"]) for t in totals} == {("user", "bob"), ("account", "bob")}
    everyone = json.loads(cluster.cli("gacct", "-a", "--json", check=True).stdout)
    assert sorted(r["id"] for r in everyone) == sorted([job, mine]), "admins see every job"

    listed = cluster.cli("gadmin", "user", "list", "--json", check=True)
    assert {u["name"]: u["admin"] for u in json.loads(listed.stdout)} == {
        "bob": False,
        admin: True,
    }
    audit = json.loads(cluster.cli("gadmin", "audit", "--json", check=True).stdout)
    refusals = {(e["user"], e["action"]) for e in audit if not e["allowed"]}
    assert refusals == {("bob", "JobService/CancelJobs"), ("bob", "AdminService/DrainNode")}
    assert (admin, "UserService/AddUser") in {(e["user"], e["action"]) for e in audit}

    cluster.cli("gadmin", "user", "revoke", "bob", check=True)
    gone = bob("gqueue")
    assert gone.returncode == 1 and "not signed in" in gone.stderr

    db = f"sqlite:///{cluster.root / 'sched.db'}"
    boot = subprocess.run(
        [sys.executable, "-m", "rota.cli.rota_main", "admin-token", "root2", "--db", db],
        env=cluster.env,
        capture_output=True,
        text=True,
    )
    assert boot.returncode == 0, boot.stderr
    as_root2 = {**cluster.env, "ROTA_TOKEN": boot.stdout.strip()}
    users_now = subprocess.run(
        [sys.executable, "-m", "rota.cli.gadmin", "user", "list", "--json"],
        env=as_root2,
        capture_output=True,
        text=True,
    )
    assert users_now.returncode == 0, users_now.stderr
