"""gcancel takes scancel's filters (-n, -t, -u, --me, -p) as SLURM users type them daily:
`scancel -n sweep -t PD`, `scancel -u $USER`, and gqueue their SQUEUE_FORMAT; real scheduler,
agent and containers."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cluster import TEST_IMAGE, Cluster


def _job(name: str) -> str:
    return f'name: {name}\nimage: {TEST_IMAGE}\ncommand: ["sleep", "600"]\n'


@pytest.mark.docker
def test_gcancel_filters_pick_the_callers_jobs_by_name_and_state(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    running = cluster.submit(_job("sweep"))
    held = cluster.submit(_job("sweep"), "--hold")
    other = cluster.submit(_job("eval"))
    bob = cluster.add_user("bob")
    bobs = cluster.cli(
        "gsub",
        "--parsable",
        "-J",
        "sweep",
        f"--container-image={TEST_IMAGE}",
        "--wrap",
        "sleep 600",
        token=bob,
        cwd=cluster.root,
    )
    assert bobs.returncode == 0, bobs.stderr
    bobs_id = bobs.stdout.strip()
    cluster.wait_state(running, "RUNNING")
    # gqueue takes a SLURM user's SQUEUE_FORMAT as squeue does (-o wins over it)
    env = {**cluster.env, "SQUEUE_FORMAT": "%i %j %t"}
    argv = [sys.executable, "-m", "rota.cli.gqueue", "-h", "-j", running]
    listed = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    assert listed.split() == [running, "sweep", "R"]
    argv += ["-o", "%i"]
    listed = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    assert listed.split() == [running]
    long = cluster.cli("gqueue", "-l", "-j", running, check=True).stdout.splitlines()
    assert long[0].split()[:5] == ["JOBID", "PARTITION", "NAME", "USER", "STATE"]
    row = long[1].split()
    assert (row[0], row[1], row[2], row[4]) == (running, "default", "sweep", "RUNNING")

    # -n and -t together: only the pending one of that name
    assert cluster.cli("gcancel", "-n", "sweep", "-t", "PD", check=True).stdout == ""
    assert cluster.wait_state(held, "CANCELLED")
    assert cluster.job(running)["state"] == "RUNNING"
    # -n alone: the caller's own jobs of that name, never another user's
    cluster.cli("gcancel", "-n", "sweep", check=True)
    cluster.wait_state(running, "CANCELLED")
    assert cluster.job(other)["state"] == "RUNNING"
    assert cluster.job(bobs_id)["state"] in ("PENDING", "CONFIGURING", "RUNNING")
    # nothing picked is not an error; no id and no filter is a usage error
    assert cluster.cli("gcancel", "--me", "-n", "nothing").returncode == 0
    none = cluster.cli("gcancel")
    assert none.returncode == 2
    assert "name a job id, or filters (-n, -u, -t, -p, --me)" in none.stderr
    # -u names another user: bob may not cancel the admin's jobs, and nothing is cancelled
    refused = cluster.cli("gcancel", "-u", cluster.jobs()[0]["user"], token=bob)
    assert refused.returncode == 1
    assert cluster.job(other)["state"] == "RUNNING"
    # an admin's -u: that user's jobs
    cluster.cli("gcancel", "-u", "bob", check=True)
    cluster.wait_state(bobs_id, "CANCELLED")
