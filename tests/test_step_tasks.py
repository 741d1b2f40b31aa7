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
