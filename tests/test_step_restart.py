"""Step tasks across an agent restart (issue 24, item 3): real scheduler, two real agents, real
Docker. When the agent of the node where srun runs is killed mid-step, its tasks (``docker
exec`` processes in the job's container, which outlive the agent) are stopped by the agent
that replaces it, the scheduler stops the step's tasks on the other node and records the step
FAILED, srun fails, and the job itself goes on (adopted) and runs its next step. The script
then waits for the test's "release" file, so nothing is stopped by the job's own end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster import TEST_IMAGE, Cluster, wait_for

SECONDS = 3137  # the tasks' sleep (plus their node's index), to find their processes here

SCRIPT = f"""#!/bin/sh
#SBATCH --nodes=2
#SBATCH --time=5:00
#ROTA image={TEST_IMAGE}
srun sh -c 'echo "started $SLURM_PROCID"; exec sleep $(({SECONDS} + SLURM_NODEID))'
echo "rc=$?"
srun sh -c 'echo "after $SLURM_PROCID"'
until [ -e release ]; do sleep 0.1; done
"""


def _tasks() -> list[int]:
    """The node indices of the step's tasks running on this host (both nodes' containers)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        for node in (0, 1):
            if cmdline == f"sleep\0{SECONDS + node}\0".encode():
                found.append(node)
    return sorted(found)


@pytest.mark.docker
def test_tasks_left_by_a_restarted_agent_are_stopped_and_their_step_failed(
    cluster: Cluster,
) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    cluster.start_agent("n2", gpus=1)
    script = cluster.write_job("restart.sh", SCRIPT)
    job = cluster.cli("gsub", "--parsable", str(script), cwd=cluster.root, check=True)
    job_id = job.stdout.strip()
    wait_for(
        lambda: {"started 0", "started 1"} <= set(cluster.cli("glogs", job_id).stdout.splitlines()),
        60,
        what="the step's two tasks",
    )
    wait_for(lambda: _tasks() == [0, 1], 30, what="the tasks' processes")
    first = cluster.job(job_id)["nodes"][0]  # where the script and its srun run
    short = next(s for s in ("n1", "n2") if cluster.node_name(s) == first)

    cluster.kill(f"agent-{short}")
    assert 0 in _tasks()  # docker exec processes outlive the agent that started them
    cluster.start_agent(short, gpus=1)  # adopts the job's container, stops what it left

    wait_for(lambda: not _tasks(), 60, what="the tasks stopped on both nodes")
    wait_for(
        lambda: cluster.cli("glogs", job_id).stdout.count("after") == 2, 60, what="the next step"
    )
    assert cluster.job(job_id)["state"] == "RUNNING"  # the job went on (its script waits)
    lines = cluster.cli("glogs", job_id, check=True).stdout.splitlines()
    # srun's stderr lines reach the log through another pipe than the script's stdout: the
    # order between the two is not kept
    lines = [line for line in lines if not line.startswith("srun: ")]
    assert lines[-3] == "rc=1"  # srun failed, then the next step ran on both nodes
    assert sorted(lines[-2:]) == ["after 0", "after 1"]
    (cluster.root / "release").touch()
    assert cluster.wait_state(job_id, "COMPLETED", "FAILED", timeout=60)["state"] == "COMPLETED"
    show = cluster.cli("gcontrol", "show", "job", job_id, check=True).stdout
    assert f"step {job_id}.0 ended FAILED" in show
    assert f"node {first}, where srun ran, disconnected" in show
    assert f"step {job_id}.1 ended COMPLETED: exit code 0" in show
    assert "stopped 1 step task(s) an earlier agent process left running" in cluster.log(
        f"agent-{short}"
    )
