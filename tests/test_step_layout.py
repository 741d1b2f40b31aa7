"""Where an srun step's tasks go (``step_layout.plan``), table by table: the job's layout by
default, srun's -N, -n, --ntasks-per-node and --gpus-per-task over it, and refusals naming
what the allocation lacks."""

from __future__ import annotations

import pytest

from rota.jobspec import JobSpec
from rota.messages import StepLayout
from rota.scheduler.cluster.model import JobRecord, NodeAlloc
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.step_layout import plan
from rota.states import JobState


def _job(nodes: int, gpus: int, **spec: int) -> JobRecord:
    allocation = [NodeAlloc(f"n{i}", tuple(range(gpus))) for i in range(nodes)]
    job_spec = JobSpec(image="img", command=("true",), gpus=gpus, nodes=nodes, **spec)
    return JobRecord(7, "j", "u", "a", job_spec, JobState.RUNNING, 0.0, 0.0, allocation=allocation)


def _tasks(job: JobRecord, layout: StepLayout) -> list[tuple[str, int, int, int, tuple[int, ...]]]:
    """(node, node id, rank, local id, GPUs) of every task."""
    return [
        (part.node, part.node_id, t.rank, t.local_id, t.gpu_indices)
        for part in plan(job, layout).nodes
        for t in part.tasks
    ]


@pytest.mark.parametrize(
    ("job", "layout", "expected", "per_node"),
    [
        (_job(2, 1), StepLayout(), [("n0", 0, 0, 0, (0,)), ("n1", 1, 1, 0, (0,))], "1(x2)"),
        (
            _job(1, 2, ntasks_per_node=2, gpus_per_task=1),
            StepLayout(),
            [("n0", 0, 0, 0, (0,)), ("n0", 0, 1, 1, (1,))],
            "2",
        ),
        (
            _job(2, 2, ntasks=3),
            StepLayout(),
            [("n0", 0, 0, 0, (0, 1)), ("n0", 0, 1, 1, (0, 1)), ("n1", 1, 2, 0, (0, 1))],
            "2,1",
        ),
        (_job(2, 1), StepLayout(nodes=1), [("n0", 0, 0, 0, (0,))], "1"),
        (
            _job(2, 4, ntasks_per_node=2),
            StepLayout(ntasks=2),
            [("n0", 0, 0, 0, (0, 1, 2, 3)), ("n0", 0, 1, 1, (0, 1, 2, 3))],
            "2",
        ),
        (
            _job(2, 2),
            StepLayout(ntasks_per_node=2, gpus_per_task=1),
            [
                ("n0", 0, 0, 0, (0,)),
                ("n0", 0, 1, 1, (1,)),
                ("n1", 1, 2, 0, (0,)),
                ("n1", 1, 3, 1, (1,)),
            ],
            "2(x2)",
        ),
    ],
)
def test_tasks_follow_the_job_layout_and_sruns_options(
    job: JobRecord, layout: StepLayout, expected: list[object], per_node: str
) -> None:
    assert _tasks(job, layout) == expected
    assert plan(job, layout).tasks_per_node == per_node


@pytest.mark.parametrize(
    ("job", "layout", "message"),
    [
        (_job(2, 1), StepLayout(nodes=3), "-N 3: the job has 2 node(s)"),
        (_job(2, 1), StepLayout(ntasks=1, nodes=2), "-n 1: fewer tasks than the 2 nodes"),
        (_job(1, 2), StepLayout(ntasks=3, gpus_per_task=1), "needs 3 GPU(s); the job holds 2"),
        (_job(1, 1), StepLayout(ntasks=1000), "at most 256 tasks per node"),
    ],
)
def test_a_step_the_allocation_cannot_hold_is_refused(
    job: JobRecord, layout: StepLayout, message: str
) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan(job, layout)


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        # a vLLM server on the job's last node beside training on the others
        (StepLayout(nodes=1, ntasks=1, nodelist="n2"), [("n2", 0, 0, 0, (0,))]),
        (StepLayout(nodelist="n[0,2]"), [("n0", 0, 0, 0, (0,)), ("n2", 1, 1, 0, (0,))]),
        (StepLayout(nodes=2, nodelist="n2"), [("n0", 0, 0, 0, (0,)), ("n2", 1, 1, 0, (0,))]),
    ],
)
def test_srun_w_runs_the_step_on_the_nodes_it_names(
    layout: StepLayout, expected: list[object]
) -> None:
    assert _tasks(_job(3, 1), layout) == expected


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        (StepLayout(nodelist="n7"), "-w n7: n7 not among the job's nodes (n[0-2])"),
        (StepLayout(nodes=1, nodelist="n[0-1]"), "-w n[0-1] names 2 nodes but -N asks 1"),
    ],
)
def test_srun_w_outside_the_allocation_is_refused(layout: StepLayout, message: str) -> None:
    with pytest.raises(
        UserError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        plan(_job(3, 1), layout)
