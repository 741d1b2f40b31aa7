"""Self-fencing: an agent cut off from the scheduler stops its jobs before the scheduler may
run them elsewhere, so a requeued job never runs in two places."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import Api, config_file

SLEEPER = f"image: {TEST_IMAGE}\ncommand: [sleep, '600']\nresources: {{gpus: 1}}\nrequeue: true\n"


def test_agent_cut_off_stops_its_jobs_before_the_grace_period_ends(cluster: Cluster) -> None:
    # the agent notices the silence after 10 s and fences half the grace later (a grace under
    # its 40 s margin): 24 s left it 2 s to stop the job, too little on a loaded machine
    grace = 40.0
    cluster.start_scheduler(
        "--open-registration", "--config", config_file(cluster, node_grace=grace, node_timeout=3)
    )
    cluster.start_agent("n1", gpus=1)
    job_id = cluster.submit(SLEEPER)
    cluster.wait_state(job_id, "RUNNING")
    assert cluster.containers(all_states=False)

    scheduler = cluster.procs["scheduler"]
    os.kill(scheduler.pid, signal.SIGSTOP)  # the scheduler stops answering (a partition)
    frozen_at = time.monotonic()
    try:
        wait_for(
            lambda: not cluster.containers(all_states=False),
            grace + 20,
            interval=0.5,
            what="the agent to stop its job while cut off",
        )
        stopped_after = time.monotonic() - frozen_at
    finally:
        os.kill(scheduler.pid, signal.SIGCONT)
    assert stopped_after < grace, f"job still ran {stopped_after:.0f}s into a {grace:.0f}s grace"
    assert "no contact with the scheduler" in cluster.log("agent-n1")

    job = wait_for(
        lambda: (j := cluster.job(job_id))["attempt"] == 2 and j["state"] == "RUNNING" and j,
        grace + 30,
        interval=0.5,
        what="the job requeued and running again",
    )
    assert len(cluster.containers(all_states=False)) == 1
    events = cluster.cli("gcontrol", "show", "job", job_id, check=True).stdout
    assert "-> NODE_FAIL" in events and "fenced" in events
    assert job["nodes"] == [cluster.node_name("n1")]


# ignores SIGTERM (PID 1 with a handler that only says so): only SIGKILL ends it
STUBBORN = (
    f"image: {TEST_IMAGE}\n"
    "command: [sh, -c, \"trap 'echo SIGTERM ignored' TERM; while true; do sleep 1; done\"]\n"
    "resources: {gpus: 1}\nrequeue: true\n"
)


def _inspect(name: str) -> dict[str, Any]:
    out = subprocess.run(
        ["docker", "inspect", "--format", "{{json .State}}", name],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout))


def _unix(docker_time: str) -> float:
    """Docker's RFC 3339 time with nanoseconds as Unix seconds (to the microsecond)."""
    whole, _, frac = docker_time.rstrip("Z").partition(".")
    base = datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()
    return base + float(f"0.{frac[:6] or 0}")


@pytest.mark.parametrize(
    "grace",
    [
        24.0,  # the reported case: the agent's 10 s kill_grace fits, SIGTERM comes first
        9.0,  # node_timeout 3 s and 5 s to kill leave 1 s of the 10: the agent shortens it
    ],
)
def test_a_job_that_ignores_sigterm_is_dead_before_the_scheduler_may_requeue_it(
    cluster: Cluster, grace: float
) -> None:
    cluster.start_scheduler(
        "--open-registration", "--config", config_file(cluster, node_grace=grace, node_timeout=3)
    )
    cluster.start_agent("n1", 1)  # kill_grace: 10 s (the default)
    job_id = cluster.submit(STUBBORN)
    cluster.wait_state(job_id, "RUNNING")
    [name] = cluster.containers(all_states=False)

    scheduler = cluster.procs["scheduler"]
    os.kill(scheduler.pid, signal.SIGSTOP)  # the last message it received came before this
    try:
        # the earliest moment the scheduler may requeue: node_grace after the last message it
        # received (a late wake-up of this test only makes the check easier to pass)
        time.sleep(grace)
        state = _inspect(name)
        logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True).stdout
    finally:
        os.kill(scheduler.pid, signal.SIGCONT)
    assert not state["Running"], f"job still running when node_grace ran out: {state}"
    assert state["ExitCode"] == 137, state  # it ignored SIGTERM: SIGKILL ended it
    if grace > 20:
        assert "SIGTERM ignored" in logs  # the kill grace fitted: SIGTERM came first

    api = Api(cluster.address, cluster.token)
    try:
        wait_for(
            lambda: any(e.attempt == 2 for e in api.events(job_id)),
            60,
            interval=0.5,
            what="the job requeued",
        )
        requeued = min(e.time for e in api.events(job_id) if "NODE_FAIL" in str(e))
    finally:
        api.close()
    assert _unix(state["FinishedAt"]) < requeued, "the job ended only after its requeue"
    agent_log = cluster.log("agent-n1")
    assert "no contact with the scheduler" in agent_log
    if grace < 20:
        assert "kill_grace" in agent_log and "shortened" in agent_log


def test_an_agent_restarted_while_cut_off_still_stops_its_jobs_in_time(cluster: Cluster) -> None:
    # kill -9 of the agent right after the scheduler froze: the new agent is never welcomed,
    # and keeps the fence's timings from the one before (same boot, same monotonic clock)
    grace = 20.0
    cluster.start_scheduler(
        "--open-registration", "--config", config_file(cluster, node_grace=grace, node_timeout=3)
    )
    agent = cluster.start_agent("n1", 1)
    job_id = cluster.submit(STUBBORN)
    cluster.wait_state(job_id, "RUNNING")
    [name] = cluster.containers(all_states=False)

    scheduler = cluster.procs["scheduler"]
    os.kill(scheduler.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        agent.kill()
        agent.wait()
        cluster.start_agent("n1", 1, wait=False)
        time.sleep(max(0.0, grace - (time.monotonic() - started)))
        state = _inspect(name)
    finally:
        os.kill(scheduler.pid, signal.SIGCONT)
    assert not state["Running"], f"job still running when node_grace ran out: {state}"
    assert state["ExitCode"] == 137, state
    assert "before this restart" in cluster.log("agent-n1")
    cluster.wait_state(job_id, "PENDING", "CONFIGURING", "RUNNING", timeout=60)
    job = wait_for(
        lambda: (j := cluster.job(job_id))["attempt"] == 2 and j,
        60,
        interval=0.5,
        what="the job requeued",
    )
    assert job["attempt"] == 2
