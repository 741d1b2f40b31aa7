"""SLURM habits of real batch scripts, in the scheduler (in-process, fake clock):
``--dependency=singleton`` waits for every earlier job of the same name and user to end, a bare
id is ``afterany``, accounts may be named as IDRIS names them (``six@gpu``), and ``scontrol
requeue`` inside a job is taken from a node of its current attempt only."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.inputs import SpecError
from rota.jobspec import JobSpec
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.users import UsersService
from rota.scheduler.store.store import Store
from rota.states import JobState
from rota.validate import Rules, check_spec
from tests.support.core import Harness


def test_singleton_waits_for_its_namesake_and_a_bare_id_is_afterany(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.connect("n1", gpus=4)
    first = h.submit(gpus=1, name="evaluate")
    second = h.submit(gpus=1, name="evaluate", dependency="singleton")
    other = h.submit(gpus=1, name="train", dependency="singleton")
    bare = h.submit(gpus=1, dependency=first)
    h.schedule()
    assert h.state(first) is JobState.CONFIGURING
    assert h.state(other) is JobState.CONFIGURING  # no earlier job of its name
    assert h.s.jobs.get(second)[0].reason == "Dependency"
    assert h.s.jobs.get(bare)[0].reason == "Dependency"
    h.event("n1", first, "STARTED")
    h.event("n1", first, "EXITED", exit_code=1)
    h.schedule()
    assert h.state(second) is JobState.CONFIGURING
    assert h.state(bare) is JobState.CONFIGURING  # afterany: a failure satisfies it


def test_an_account_with_at_is_a_users_account_and_a_jobs(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'db'}")
    try:
        users = UsersService(store.users, lambda: 0.0)
        user, _token = users.add("ann", accounts=["six@gpu"], default_account="six@gpu")
        assert user.default_account == "six@gpu"
        with pytest.raises(UserError, match=r"_ \. : \+ - @"):
            users.add("bob", accounts=["six gpu"])
    finally:
        store.close()
    check_spec(JobSpec(image="i", command=("true",), account="six@gpu"), Rules())
    with pytest.raises(SpecError, match="account"):
        check_spec(JobSpec(image="i", command=("true",), account="@gpu"), Rules())


def test_scontrol_requeue_is_taken_only_from_a_node_of_the_jobs_attempt(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.connect("n1")
    h.connect("n2")
    job = h.submit(gpus=1, nodelist="n1")
    h.schedule()
    h.event("n1", job, "STARTED")
    assert h.engine.steps.requeue_itself("n2", int(job), 1) == []  # not the job's node
    assert h.engine.steps.requeue_itself("n1", int(job), 2) == []  # not its attempt
    assert h.state(job) is JobState.RUNNING
    orders = h.engine.steps.requeue_itself("n1", int(job), 1)
    assert [node for node, _ in orders] == ["n1"]  # its container is stopped
    assert h.state(job) is JobState.COMPLETING
    h.event("n1", job, "KILLED", exit_code=143)
    assert h.state(job) is JobState.PENDING


def test_array_shape_and_cpus_per_task_in_the_jobs_environment() -> None:
    from rota.scheduler.cluster.model import JobRecord, NodeAlloc
    from rota.scheduler.core.slurm_env import slurm_job_env

    spec = JobSpec(image="i", command=("true",), array="0-15:4", cpus=96, ntasks_per_node=8)
    job = JobRecord(9, "sweep", "ann", "lab", spec, JobState.RUNNING, 0.0, 0.0)
    job.array_job_id, job.array_task_id = 8, 4
    job.allocation = [NodeAlloc("n1", (0,))]
    env = slurm_job_env(job)
    shape = [env[f"SLURM_ARRAY_TASK_{k}"] for k in ("COUNT", "MIN", "MAX", "STEP")]
    assert shape == ["4", "0", "12", "4"]
    # OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK: 8 tasks of 12 CPUs, not 96 each
    assert env["SLURM_CPUS_PER_TASK"] == "12"
