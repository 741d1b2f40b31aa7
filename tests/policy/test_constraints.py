"""Table-driven tests of static constraints and the reasons of jobs that can never run."""

from __future__ import annotations

import pytest

from rota.scheduler.policy import reasons
from tests.policy.builders import (
    GIB,
    make_job,
    make_node,
    make_running,
    make_snapshot,
    placed,
    plan_of,
)

NODES = (
    make_node(
        "a100", 8, gpu_name="NVIDIA A100-SXM4-80GB", gpu_memory=80 * GIB, labels={"zone": "a"}
    ),
    make_node(
        "v100", 8, gpu_name="Tesla V100-SXM2-16GB", gpu_memory=16 * GIB, labels={"zone": "b"}
    ),
)


@pytest.mark.parametrize(
    ("job", "node", "reason"),
    [
        (make_job(gpus=1, gpu_type="A100"), "a100", None),
        (make_job(gpus=1, gpu_type="v100"), "v100", None),
        (make_job(gpus=1, gpu_memory=32 * GIB), "a100", None),
        (make_job(gpus=1, node_selector={"zone": "b"}), "v100", None),
        (make_job(gpus=1, gpu_type="H100"), None, reasons.BAD_CONSTRAINTS),
        (make_job(gpus=1, gpu_memory=96 * GIB), None, reasons.BAD_CONSTRAINTS),
        (make_job(gpus=1, node_selector={"zone": "c"}), None, reasons.BAD_CONSTRAINTS),
        (make_job(gpus=9), None, reasons.BAD_CONSTRAINTS),
        (
            make_job(gpus=1, gpu_type="A100", node_selector={"zone": "b"}),
            None,
            reasons.BAD_CONSTRAINTS,
        ),
    ],
)
@pytest.mark.parametrize("policy", ["rota", "fifo-backfill", "fifo"])
def test_static_constraints(job, node, reason, policy):
    plan = plan_of(make_snapshot(NODES, (job,)), policy)
    if node is None:
        assert plan.placements == ()
        assert plan.reasons[job.id] == reason
    else:
        assert placed(plan)[job.id][0][0] == node
        assert job.id not in plan.reasons


def test_node_down_when_only_capable_node_is_unschedulable():
    nodes = (make_node("a", 8, schedulable=False), make_node("b", 2))
    plan = plan_of(make_snapshot(nodes, (make_job(gpus=4),)))
    assert plan.reasons[1] == reasons.NODE_DOWN


def test_unallocatable_gpus_are_never_given():
    node = make_node("n0", 2)
    node = type(node)(node.name, (node.gpus[0], type(node.gpus[1])(1, allocatable=False)))
    plan = plan_of(make_snapshot((node,), (make_job(1, 1), make_job(2, 1))))
    assert placed(plan) == {1: [("n0", (0,))]}
    assert plan.reasons[2] == reasons.RESOURCES


@pytest.mark.parametrize(
    ("running", "placed_on"),
    [
        ((), "n0"),  # both free: best fit picks the first
        ((make_running(9, "n0", (0,)),), "n1"),  # exclusive needs a node with nothing on it
    ],
)
def test_exclusive_takes_a_whole_empty_node(running, placed_on):
    nodes = (make_node("n0", 8), make_node("n1", 8))
    job = make_job(1, 2, exclusive=True)
    plan = plan_of(
        make_snapshot(nodes, (job, make_job(2, 1, submit=1.0)), running), "fifo-backfill"
    )
    got = placed(plan)
    assert got[1][0][0] == placed_on
    assert got[2][0][0] != placed_on  # nothing else lands on the exclusive node


def test_running_exclusive_job_blocks_its_node():
    nodes = (make_node("n0", 8),)
    running = (make_running(9, "n0", (0, 1), exclusive=True),)
    plan = plan_of(make_snapshot(nodes, (make_job(1, 1),), running))
    assert plan.placements == ()
    assert plan.reasons[1] == reasons.RESOURCES
    assert plan.est_start[1] == pytest.approx(3600.0)


def test_cpu_and_memory_are_consumed():
    nodes = (make_node("n0", 8, cpus=16, memory=64 * GIB),)
    jobs = (
        make_job(1, 1, cpus=12),
        make_job(2, 1, cpus=8, submit=1),
        make_job(3, 1, memory=32 * GIB, submit=2),
    )
    plan = plan_of(make_snapshot(nodes, jobs), "fifo-backfill")
    assert set(placed(plan)) == {1, 3}
    assert plan.reasons[2] == reasons.RESOURCES
