"""Self-fencing: an agent cut off from the scheduler stops its jobs before the scheduler may
run them elsewhere, so a requeued job never runs in two places."""

from __future__ import annotations

import os
import signal
import time

from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import config_file

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
