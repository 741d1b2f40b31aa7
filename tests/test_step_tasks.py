"""A step task's environment: srun's exported variables (as sh and bash print them), less
what describes srun's own node, with the task's rank and the GPUs it owns as its container
numbers them."""

from __future__ import annotations

import subprocess

from rota.agent.steps.tasks import Target, exported, task_env
from rota.messages import StepLaunch, StepTask


def test_exported_reads_what_the_shells_print() -> None:
    env = {"MULTI": "a 'quoted'\nsecond line", "SLURMD_NODENAME": "n1", "PLAIN": "x"}
    for shell in ("sh", "bash"):
        printed = subprocess.run(
            [shell, "-c", "export -p"], env=env, capture_output=True, check=True
        ).stdout
        got = exported(printed)
        assert (got["MULTI"], got["PLAIN"]) == (env["MULTI"], "x"), shell
        assert "SLURMD_NODENAME" not in got  # the task's node sets its own


def test_each_task_sees_its_own_gpus_as_its_container_numbers_them() -> None:
    order = StepLaunch(7, 12, 1, 3, 1, 2, 4, (), ("x",), nodelist="n[1-2]", tasks_per_node="2(x2)")
    task = StepTask(3, 1, (5,))
    nvidia = task_env(order, task, Target("c", (3, 5), "nvidia"), {"A": "1"})
    assert nvidia["CUDA_VISIBLE_DEVICES"] == "1"  # the container's second GPU
    assert task_env(order, task, Target("c", (3, 5), "env"), {})["CUDA_VISIBLE_DEVICES"] == "5"
    assert {k: nvidia[k] for k in ("A", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID")} == {
        "A": "1",
        "SLURM_PROCID": "3",
        "SLURM_LOCALID": "1",
        "SLURM_NODEID": "1",
    }
    assert (nvidia["SLURM_STEP_ID"], nvidia["SLURM_NTASKS"], nvidia["SLURM_STEP_GPUS"]) == (
        "3",
        "4",
        "5",
    )


def test_cuda_visible_devices_follows_the_agents_gpu_mode() -> None:
    """nvidia: the container has only the job's GPUs, numbered from 0 in host index order
    (whatever order they were allocated in); env: it sees the host's numbering."""
    order = StepLaunch(7, 12, 1, 0, 0, 1, 2, (), ("x",))
    held = (7, 2, 5, 3)  # the job's GPUs on the node, as allocated
    first, second = StepTask(0, 0, (7, 2)), StepTask(1, 1, (5, 3))
    seen = {
        mode: [
            task_env(order, t, Target("c", held, mode), {})["CUDA_VISIBLE_DEVICES"]
            for t in (first, second)
        ]
        for mode in ("nvidia", "env")
    }
    assert seen == {"nvidia": ["3,0", "2,1"], "env": ["7,2", "5,3"]}
    for mode in ("nvidia", "env"):  # SLURM_STEP_GPUS: always the host's indices
        assert task_env(order, second, Target("c", held, mode), {})["SLURM_STEP_GPUS"] == "5,3"
    # a GPU the container does not have is not named; a task without GPUs keeps the
    # container's own CUDA_VISIBLE_DEVICES (srun's node's is never passed on)
    assert (
        task_env(order, StepTask(0, 0, (4, 2)), Target("c", held, "nvidia"), {})[
            "CUDA_VISIBLE_DEVICES"
        ]
        == "0"
    )
    base = exported(b"export CUDA_VISIBLE_DEVICES='0,1'\nexport KEEP='y'\n")
    env = task_env(order, StepTask(0, 0, ()), Target("c", (), "nvidia"), base)
    assert "CUDA_VISIBLE_DEVICES" not in env and env["KEEP"] == "y"
