"""The scheduler's side of srun steps, driven in-process (no Docker): a multi-node batch script
runs on the first node only and the job ends with it; a step is refused to a node that does not
run the job, refused with srun's reason when the allocation cannot hold it, and numbered from
the job's events, across a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.messages import KillOrder, StepLayout, StepStart
from rota.scheduler.core.errors import AccessDenied, UserError
from rota.states import JobState
from tests.support.core import RotaHarness


def _two_node_script(h: RotaHarness) -> str:
    h.connect("a", gpus=1)
    h.connect("b", gpus=1)
    job = h.submit(nodes=2, gpus=1, slurm_env=True)
    launches = h.launches(h.schedule())
    assert [o.steps_only for o in launches] == [False, True]  # the script runs on "a" only
    h.run("a", job)
    h.run("b", job)
    return job


def test_a_batch_script_on_two_nodes_ends_the_job_when_it_ends_on_the_first(tmp_path: Path) -> None:
    h = RotaHarness(tmp_path)
    job = _two_node_script(h)
    orders = h.event("a", job, "EXITED", exit_code=0)
    assert [(n, type(o)) for n, o in orders if isinstance(o, KillOrder)] == [("b", KillOrder)]
    assert h.state(job) is JobState.COMPLETING
    h.event("b", job, "KILLED", exit_code=143)  # the other node's container, stopped
    assert h.state(job) is JobState.COMPLETED
    assert h.s.jobs.get(job)[0].exit_code == 0  # the script's, not the stopped container's


def test_a_gang_job_file_still_runs_its_command_on_every_node(tmp_path: Path) -> None:
    h = RotaHarness(tmp_path)
    h.connect("a", gpus=1)
    h.connect("b", gpus=1)
    h.submit(nodes=2, gpus=1)
    assert [o.steps_only for o in h.launches(h.schedule())] == [False, False]


def _start(job: str, **layout: int) -> StepStart:
    return StepStart(1, int(job), 1, StepLayout(**layout), ("hostname",), b"", "/")


def test_steps_are_checked_numbered_and_recorded(tmp_path: Path) -> None:
    h = RotaHarness(tmp_path)
    job = _two_node_script(h)
    h.connect("c", gpus=1)
    steps = h.s.job_steps
    with pytest.raises(AccessDenied, match="does not run"):
        steps.begin("c", _start(job))  # a node of another allocation
    with pytest.raises(AccessDenied, match="does not run"):
        steps.begin("a", StepStart(1, int(job), 2, StepLayout(), ("x",), b"", "/"))  # attempt
    with pytest.raises(UserError, match="-N 3: the job has 2 node"):
        steps.begin("a", _start(job, nodes=3))
    with pytest.raises(UserError, match="absolute path"):
        steps.begin("a", StepStart(1, int(job), 1, StepLayout(), ("x",), b"", "relative"))
    first = steps.begin("a", _start(job))
    second = steps.begin("b", _start(job, nodes=1))
    assert (first.step, second.step) == (0, 1)
    assert [(n.node, [t.rank for t in n.tasks]) for n in first.plan.nodes] == [
        ("a", [0]),
        ("b", [1]),
    ]
    steps.end(first, JobState.COMPLETED, 0, "")
    h.restart()
    third = h.s.job_steps.begin("a", _start(job))
    assert third.step == 2  # numbered on from the job's recorded events
    texts = [e.reason for e in h.s.jobs.get(job)[1] if e.reason.startswith("step ")]
    assert texts == [
        f"step {job}.0 started: 2 task(s) on a,b: hostname",
        f"step {job}.1 started: 1 task(s) on a: hostname",  # -N 1: the first node
        f"step {job}.0 ended COMPLETED: exit code 0",
        # step 1 never ended before the restart: its srun failed with the old stream
        f"step {job}.1 ended FAILED: exit code 1 (srun lost contact with the scheduler, "
        "which restarted)",
        f"step {job}.2 started: 2 task(s) on a,b: hostname",
    ]
