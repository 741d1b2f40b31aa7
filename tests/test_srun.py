"""srun job steps (issue 24, item 3): real scheduler, real agents, real Docker with the busybox
image. The batch script runs once, on the first node; srun inside it starts the step's tasks in
the job's containers through the agents, each with its rank, node and GPUs; their output lands
in the job's log and a failed task fails srun."""

from __future__ import annotations

import json
import re

import pytest

from rota.hostlist import expand
from tests.cluster import TEST_IMAGE, Cluster, wait_for

LAYOUT = f"""#!/bin/sh
#SBATCH --job-name=steps
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-task=1
#SBATCH --time=5:00
#ROTA image={TEST_IMAGE}
echo "batch on $SLURMD_NODENAME"
srun sh -c 'echo "task $SLURM_PROCID local $SLURM_LOCALID node $SLURM_NODEID step $SLURM_STEP_ID \
of $SLURM_NTASKS gpus $CUDA_VISIBLE_DEVICES"'
srun -n 1 sh -c 'echo to-stderr >&2; exit 3'
echo "rc=$?"
export FROM_SCRIPT=kept
srun -n 1 sh -c 'echo "background sees $FROM_SCRIPT in $(pwd)"' &
wait
srun -l sh -c 'echo a; printf b'
timeout -s INT 2 srun -n 1 sleep 60
echo "interrupted rc=$?"
echo done
"""

TWO_NODES = f"""#!/bin/sh
#SBATCH --job-name=torchrun-like
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=1
#SBATCH --time=5:00
#ROTA image={TEST_IMAGE}
echo "batch ran on $SLURMD_NODENAME"
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=29500
srun sh -c 'echo "rank $SLURM_PROCID of $SLURM_NTASKS node $SLURM_NODEID on $SLURMD_NODENAME \
master $MASTER_ADDR:$MASTER_PORT gpus $CUDA_VISIBLE_DEVICES"'
srun -N 1 sh -c 'echo "one node: $SLURMD_NODENAME"'
srun -n 1 sh -c 'exit 0' && srun sh -c 'test "$SLURM_NODEID" = 0 || exit 7'
echo "rc=$?"
scontrol show job "$SLURM_JOB_ID" | grep -oE 'JobState=[A-Z]+|NumNodes=[0-9]+|TimeLimit=[0-9:]+|BatchHost=[^ ]+'
squeue -h -j "$SLURM_JOB_ID" -o "%i %T %D %l %j"
echo "others: $(squeue -h -j 999999 | wc -l)"
squeue -u "$USER" | head -n 1
"""


def _log(cluster: Cluster, job_id: str, node: str = "") -> str:
    where = ["--node", node] if node else []
    return cluster.cli("glogs", *where, job_id, check=True).stdout


def _steps(cluster: Cluster, job_id: str) -> list[str]:
    """The job's step events, as ``gcontrol show job`` lists them."""
    out = cluster.cli("gcontrol", "show", "job", job_id, check=True).stdout
    return [line.split("INFO  ", 1)[1] for line in out.splitlines() if "INFO  step " in line]


@pytest.mark.docker
def test_srun_runs_the_jobs_task_layout_with_ranks_gpus_and_exit_codes(cluster: Cluster) -> None:
    cluster.start_scheduler()
    node = cluster.node_name("n1")
    cluster.start_agent("n1", gpus=2)  # 2 tasks: the test machine may have 2 CPUs
    script = cluster.write_job("steps.sh", LAYOUT)
    result = cluster.cli("gsub", "--wait", "--parsable", str(script), cwd=cluster.root)
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert cluster.job(job_id)["state"] == "COMPLETED"
    out = _log(cluster, job_id)
    lines = out.splitlines()
    assert lines[0] == f"batch on {node}"
    tasks = sorted(line for line in lines if line.startswith("task "))
    assert tasks == [f"task {i} local {i} node 0 step 0 of 2 gpus {i}" for i in range(2)]
    assert sorted(x for x in lines if x[:3] in ("0: ", "1: ")) == ["0: a", "0: b", "1: a", "1: b"]
    assert "to-stderr" in lines
    assert f"srun: error: {node}: task 0: Exited with exit code 3" in lines
    assert "rc=3" in lines
    assert f"background sees kept in {cluster.root}" in lines
    # the script ran to its end (the interrupted srun's stderr may reach the log after it)
    assert lines.count("done") == 1
    assert lines.index("done") > max(i for i, x in enumerate(lines) if x.startswith("interrupted"))
    steps = _steps(cluster, job_id)
    assert (
        f"step {job_id}.1 ended FAILED: exit code 3 ({node}: task 0: Exited with exit code 3)"
        in steps
    )
    assert f"step {job_id}.2 ended COMPLETED: exit code 0" in steps
    # srun interrupted (^C, or timeout -s INT): its step's tasks are stopped, the step CANCELLED
    assert [x for x in steps if x.startswith(f"step {job_id}.4 ended")] == [
        f"step {job_id}.4 ended CANCELLED: exit code 143 ({node}: task 0: Terminated)"
    ]


@pytest.mark.docker
def test_a_two_node_script_runs_once_and_srun_fans_out(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    cluster.start_agent("n2", gpus=1)
    script = cluster.write_job("two.sh", TWO_NODES)
    result = cluster.cli("gsub", "--wait", "--parsable", str(script), cwd=cluster.root)
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    job = cluster.job(job_id)
    assert job["state"] == "COMPLETED", job
    first, second = job["nodes"]
    assert expand(first + "," + second) == job["nodes"]
    out = _log(cluster, job_id, first)
    lines = out.splitlines()
    assert [line for line in lines if line.startswith("batch ran on")] == [f"batch ran on {first}"]
    assert not _log(cluster, job_id, second).strip()  # the script never ran there
    ranks = sorted(line for line in lines if line.startswith("rank "))
    assert ranks == [
        f"rank 0 of 2 node 0 on {first} master {first}:29500 gpus 0",
        f"rank 1 of 2 node 1 on {second} master {first}:29500 gpus 0",
    ]
    assert f"one node: {first}" in lines
    assert "rc=7" in lines
    assert re.search(rf"srun: error: {second}: task 1: Exited with exit code 7", out)

    # scontrol and squeue answer inside the job, as SLURM's do (srun's stderr reaches the log
    # through another pipe than the script's stdout: it may come after them)
    assert [line for line in lines if not line.startswith("srun: ")][-7:] == [
        "JobState=RUNNING",
        "TimeLimit=00:05:00",
        f"BatchHost={first}",
        "NumNodes=2",
        f"{job_id} RUNNING 2 5:00 torchrun-like",
        "others: 0",
        "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)",
    ]
    steps = _steps(cluster, job_id)
    assert steps[0] == f"step {job_id}.0 started: 2 task(s) on {first},{second}: sh -c " + (
        "'echo \"rank $SLURM_PROCID of $SLURM_NTASKS node $SLURM_NODEID on $SLURMD_NODENAME "
        "master $MASTER_ADDR:$MASTER_PORT gpus $CUDA_VISIBLE_DEVICES\"'"
    )
    assert steps[1] == f"step {job_id}.0 ended COMPLETED: exit code 0"
    assert steps[-1] == (
        f"step {job_id}.3 ended FAILED: exit code 7 ({second}: task 1: Exited with exit code 7)"
    )
    # gacct: the job, its batch script and its steps (sacct -j 12), or one step (-j 12.0)
    rows = json.loads(cluster.cli("gacct", "-j", job_id, "--json", check=True).stdout)
    assert [(r["id"], r["state"], r["exit_code"]) for r in rows] == [
        (job_id, "COMPLETED", 0),
        (f"{job_id}.batch", "COMPLETED", 0),
        (f"{job_id}.0", "COMPLETED", 0),
        (f"{job_id}.1", "COMPLETED", 0),
        (f"{job_id}.2", "COMPLETED", 0),
        (f"{job_id}.3", "FAILED", 7),
    ]
    (step,) = json.loads(cluster.cli("gacct", "-j", f"{job_id}.1", "--json", check=True).stdout)
    assert (step["id"], step["nodes"], step["name"]) == (
        f"{job_id}.1",
        [first],
        "sh -c 'echo \"one node: $SLURMD_NODENAME\"'",
    )
    assert step["start_time"] <= step["end_time"]


@pytest.mark.docker
def test_a_step_stopped_by_the_time_limit_is_reported_as_such(cluster: Cluster) -> None:
    cluster.start_scheduler()
    node = cluster.node_name("n1")
    cluster.start_agent("n1", gpus=1)
    script = cluster.write_job(
        "slow.sh",
        f"#!/bin/sh\n#SBATCH --time=0:05\n#ROTA image={TEST_IMAGE}\n"
        "srun sh -c 'echo started; sleep 60'\necho \"srun rc=$?\"\n",
    )
    result = cluster.cli("gsub", "--wait", "--parsable", str(script), cwd=cluster.root)
    job_id = result.stdout.strip()
    assert cluster.job(job_id)["state"] == "TIMEOUT"
    lines = _log(cluster, job_id).splitlines()
    assert lines[0] == "started"
    assert re.fullmatch(
        rf"slurmstepd: error: \*\*\* STEP {job_id}\.0 ON {node} CANCELLED AT "
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d DUE TO TIME LIMIT \*\*\*",
        lines[1],
    )
    assert _steps(cluster, job_id)[-1] == (
        f"step {job_id}.0 ended TIMEOUT: exit code 143 ({node}: task 0: Terminated)"
    )


@pytest.mark.docker
def test_an_srun_waiting_on_an_agent_that_restarts_fails_instead_of_hanging(
    cluster: Cluster,
) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    script = cluster.write_job(
        "restart.sh",
        f"#!/bin/sh\n#SBATCH --time=2:00\n#ROTA image={TEST_IMAGE}\n"
        "srun sh -c 'echo started; sleep 5'\necho \"rc=$?\"\nsrun echo after\n",
    )
    job_id = cluster.cli("gsub", "--parsable", str(script), check=True).stdout.strip()
    wait_for(lambda: "started" in cluster.cli("glogs", job_id).stdout, 30, what="the step")
    cluster.kill("agent-n1")
    cluster.start_agent("n1", gpus=1)  # adopts the job's container and its spool
    state = cluster.wait_state(job_id, "COMPLETED", "FAILED", timeout=60)["state"]
    assert state == "COMPLETED"
    lines = _log(cluster, job_id).splitlines()
    shown = [line for line in lines if not line.startswith("srun: ")]  # stderr: its own pipe
    assert shown[-2:] == ["rc=1", "after"]  # the lost step failed; the next one ran
