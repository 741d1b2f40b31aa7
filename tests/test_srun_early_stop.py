"""srun -K (--kill-on-bad-exit) and -W (--wait) between the tasks of one node, as SLURM's srun
acts on them and with its lines (SLURM 22.05, asked with bench/slurm_local.sh): real
scheduler, real agent, real Docker with the busybox image. Each task but rank 1 marks that it
started (in a directory nobody may write), so rank 1 ends only once the others run. Without
-K, srun names every failed task, grouped as SLURM's srun groups them."""

from __future__ import annotations

import json
import re

import pytest

from tests.cluster import TEST_IMAGE, Cluster

# rank 1 waits for the other three to start, then ends with $1; the others sleep
TASK = (
    'if [ "$SLURM_PROCID" = 1 ]; then '
    'while [ "$(ls $2.* 2>/dev/null | wc -l)" -lt 3 ]; do sleep 0.1; done; exit $1; fi; '
    'touch $2.$SLURM_PROCID; sleep 60; echo "done $SLURM_PROCID"'
)
SCRIPT = f"""
cd marks
srun -K sh -c '{TASK}' task 3 k
echo "K rc=$?"
srun --wait=2 sh -c '{TASK}' task 0 w
echo "W rc=$?"
srun -K sh -c 'exit 0'
echo "fine rc=$?"
srun sh -c 'case $SLURM_PROCID in 0|2) exit 2;; 3) exit 5;; esac'
echo "grouped rc=$?"
"""


@pytest.mark.docker
def test_kill_on_bad_exit_and_wait_stop_the_other_tasks_of_one_node(cluster: Cluster) -> None:
    cluster.start_scheduler()
    node = cluster.node_name("n1")
    cluster.start_agent("n1", gpus=None)
    job = {
        "name": "early-stop",
        "image": TEST_IMAGE,
        "ntasks": 4,  # four tasks on one node (no CPUs asked: the machine may have two)
        "time_limit": "2:00",
        "slurm_env": True,
        "command": ["/bin/sh", "-c", SCRIPT],
    }
    path = cluster.write_job("early.yaml", json.dumps(job))
    (cluster.root / "marks").mkdir(mode=0o777)
    (cluster.root / "marks").chmod(0o777)  # the job runs as nobody
    result = cluster.cli("gsub", "--wait", "--parsable", str(path), cwd=cluster.root)
    job_id = result.stdout.strip()
    assert cluster.job(job_id)["state"] == "COMPLETED", result.stderr
    lines = cluster.cli("glogs", job_id, check=True).stdout.splitlines()
    assert not [x for x in lines if x.startswith("done")]  # nobody slept out their 60 s
    cancelled = (
        rf"slurmstepd: error: \*\*\* STEP {job_id}\.(\d) ON {node} CANCELLED AT [-\dT:]+ \*\*\*"
    )
    # -K: rank 1 fails, the others get SIGTERM; srun exits with their 128 + 15
    k = lines[: lines.index("K rc=143") + 1]
    assert k[:2] == [
        f"srun: error: {node}: task 1: Exited with exit code 3",
        f"srun: launch/slurm: _step_signal: Terminating StepId={job_id}.0",
    ]
    assert re.fullmatch(cancelled, k[2])
    assert k[3:] == [
        f"srun: error: {node}: tasks 0,2-3: Terminated",
        f"srun: Force Terminated StepId={job_id}.0",
        "K rc=143",
    ]
    # -W 2: rank 1 ends well, the others are killed (SIGKILL) 2 s later
    w = lines[len(k) : lines.index("W rc=137") + 1]
    assert w[:5] == [
        "srun: First task exited 2s ago",
        f"srun: StepId={job_id}.1 tasks 0,2-3: running",
        f"srun: StepId={job_id}.1 task 1: exited",
        f"srun: launch/slurm: _step_signal: Terminating StepId={job_id}.1",
        w[4],
    ]
    assert re.fullmatch(cancelled, w[4])
    assert w[5:] == [
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        f"srun: error: {node}: tasks 0,2-3: Killed",
        "W rc=137",
    ]
    # without -K, srun names every failed task, grouped by how it ended, as SLURM's does
    assert lines[len(k) + len(w) :] == [
        "fine rc=0",
        f"srun: error: {node}: tasks 0,2: Exited with exit code 2",
        f"srun: error: {node}: task 3: Exited with exit code 5",
        "grouped rc=5",
    ]
    steps = cluster.cli("gcontrol", "show", "job", job_id, check=True).stdout
    assert (
        f"step {job_id}.0 ended FAILED: exit code 143 ({node}: task 1: Exited with exit code 3)"
        in steps
    )
    assert f"step {job_id}.1 ended FAILED: exit code 137 ({node}: task 0: Killed)" in steps
    assert f"step {job_id}.2 ended COMPLETED: exit code 0" in steps
    assert (
        f"step {job_id}.3 ended FAILED: exit code 5 ({node}: task 0: Exited with exit code 2)"
        in steps
    )
