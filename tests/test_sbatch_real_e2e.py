"""Real-world script shapes end to end (tests/test_sbatch_real.py checks their translation):
a GRPO-style job serving on its last node with ``srun --nodelist`` while its launcher line
gives ``srun --jobid $SLURM_JOB_ID`` (a separate value), from ``-D .`` with an ``O-%x.%J``
output file; one task per GPU from ``--ntasks-per-gpu=1``; and the preemption idiom: a USR1
trap (``--signal=B:USR1@N``) that runs ``scontrol requeue $SLURM_JOB_ID``; srun's ``-K`` and
``-W`` stopping the other nodes' tasks. Real scheduler, two agents,
real Docker with the busybox image."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster import TEST_IMAGE, Cluster
from tests.faults_support import config_file

SERVE_LAST = f"""#!/bin/sh
#SBATCH --job-name=grpo
#SBATCH -D .
#SBATCH --output=O-%x.%J
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:1
#SBATCH --time=5:00
#ROTA image={TEST_IMAGE}
SERVER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | tail -n 1)
srun --nodes=1 --ntasks=1 --nodelist=$SERVER sh -c 'echo "server on $SLURMD_NODENAME"' &
SRUN_ARGS="--wait=60 --kill-on-bad-exit=1"
srun $SRUN_ARGS --jobid $SLURM_JOB_ID sh -c 'echo "rank $SLURM_PROCID on $SLURMD_NODENAME"'
wait
echo "batch in $(pwd)"
"""

PER_GPU = f"""#!/bin/sh
#SBATCH -J per-gpu
#SBATCH --gpus-per-node=2
#SBATCH --ntasks-per-gpu=1
#SBATCH --time=5:00
#ROTA image={TEST_IMAGE}
srun sh -c 'echo "task $SLURM_PROCID of $SLURM_NTASKS gpu $CUDA_VISIBLE_DEVICES"'
"""

STOP_THE_REST = f"""#!/bin/sh
#SBATCH -J stop-rest
#SBATCH --nodes=2
#SBATCH --time=5:00
#ROTA image={TEST_IMAGE}
# a rank that fails leaves the other waiting for ever (NCCL): srun -K stops it
srun --kill-on-bad-exit=1 sh -c 'if [ "$SLURM_NODEID" = 1 ]; then exit 3; fi; sleep 600'
echo "K rc=$?"
# one rank done: -W 2 stops the other two seconds later
srun --wait=2 sh -c 'if [ "$SLURM_NODEID" = 1 ]; then exit 0; fi; sleep 600'
echo "W rc=$?"
"""

REQUEUE_ITSELF = f"""#!/bin/sh
#SBATCH -J ckpt
#SBATCH --time=1:00
#SBATCH --signal=B:USR1@55
#SBATCH --requeue
#SBATCH --open-mode=append
#ROTA image={TEST_IMAGE}
requeue_me() {{ echo "USR1: checkpoint, requeue"; scontrol requeue "$SLURM_JOB_ID"; }}
trap requeue_me USR1
echo "restart $SLURM_RESTART_COUNT"
if [ "$SLURM_RESTART_COUNT" -gt 0 ]; then exit 0; fi
sleep 120 &
wait
sleep 120
"""


@pytest.mark.docker
def test_a_server_on_the_last_node_beside_a_launcher_with_jobid(cluster: Cluster) -> None:
    cluster.start_scheduler("--open-registration", "--config", config_file(cluster))
    cluster.start_agent("n1", gpus=1)
    cluster.start_agent("n2", gpus=1)
    work = cluster.root / "work"  # the submit directory, where the job (nobody) may write
    work.mkdir()
    work.chmod(0o777)
    script = cluster.write_job("grpo.slurm", SERVE_LAST)
    result = cluster.cli("gsub", "--wait", "--parsable", str(script), cwd=work)
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    job = cluster.job(job_id)
    assert job["state"] == "COMPLETED", job
    first, last = job["nodes"]
    out = Path(work / f"O-grpo.{job_id}").read_text()  # -D . and %J, as SLURM names it
    lines = out.splitlines()
    assert f"server on {last}" in lines  # srun --nodelist ran the step there only
    assert sorted(x for x in lines if x.startswith("rank ")) == [
        f"rank 0 on {first}",
        f"rank 1 on {last}",
    ]
    assert lines[-1] == f"batch in {work}"


@pytest.mark.docker
def test_ntasks_per_gpu_gives_each_task_its_gpu(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=2)
    script = cluster.write_job("per_gpu.sh", PER_GPU)
    result = cluster.cli("gsub", "--wait", "--parsable", str(script), cwd=cluster.root)
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    log = cluster.cli("glogs", job_id, check=True).stdout.splitlines()
    assert sorted(x for x in log if x.startswith("task ")) == [
        "task 0 of 2 gpu 0",
        "task 1 of 2 gpu 1",
    ]


@pytest.mark.docker
def test_a_usr1_trap_requeues_its_own_job_with_scontrol(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    script = cluster.write_job("ckpt.sh", REQUEUE_ITSELF)
    result = cluster.cli("gsub", "--parsable", str(script), cwd=cluster.root)
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    job = cluster.wait_state(job_id, "COMPLETED", "FAILED", "TIMEOUT", timeout=90)
    assert job["state"] == "COMPLETED", job
    first = cluster.cli("glogs", "--attempt", "1", job_id, check=True).stdout.splitlines()
    assert first[:2] == ["restart 0", "USR1: checkpoint, requeue"]
    second = cluster.cli("glogs", "--attempt", "2", job_id, check=True).stdout.splitlines()
    assert second == ["restart 1"]
    shown = cluster.cli("gcontrol", "show", "job", job_id, check=True).stdout
    assert "requeued by" in shown


@pytest.mark.docker
def test_srun_kill_on_bad_exit_and_wait_stop_the_other_nodes_tasks(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    cluster.start_agent("n2", gpus=1)
    script = cluster.write_job("stop.sh", STOP_THE_REST)
    result = cluster.cli("gsub", "--wait", "--parsable", str(script), cwd=cluster.root)
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    first, second = cluster.job(job_id)["nodes"]
    lines = cluster.cli("glogs", job_id, check=True).stdout.splitlines()
    # srun names the failed task and the one it stopped on the other node
    k = lines[: lines.index("K rc=143")]  # the highest: the stopped task's 128 + SIGTERM
    assert sorted(k) == sorted(
        [
            f"srun: error: {second}: task 1: Exited with exit code 3",
            f"srun: error: {first}: task 0: Terminated",
        ]
    )
    assert lines[len(k) + 1 :] == [f"srun: error: {first}: task 0: Killed", "W rc=137"]
