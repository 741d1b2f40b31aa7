"""Preemption: only of preemptible lower-class jobs, only when the waiting job then fits."""

from __future__ import annotations

import pytest

from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.snapshot import Allocation, GpuView, NodeView, RunningJob
from tests.policy.builders import (
    GIB,
    HOUR,
    make_job,
    make_node,
    make_nodes,
    make_running,
    make_snapshot,
    plan_of,
)

NODES = make_nodes(1)


def low(id, gpus, start, **kw):
    return make_running(id, "n0", gpus, start=start, qos="low", preemptible=True, **kw)


@pytest.mark.parametrize(
    ("running", "job", "victims"),
    [
        # the most recently started low job goes first, and only as many as needed
        ((low(7, (0, 1, 2, 3), 0.0), low(8, (4, 5, 6, 7), 50.0)), make_job(1, 4, qos="high"), (8,)),
        (
            (low(7, (0, 1, 2, 3), 0.0), low(8, (4, 5, 6, 7), 50.0)),
            make_job(1, 8, qos="high"),
            (7, 8),
        ),
        # free GPUs count: only one victim needed for 6 GPUs
        ((low(7, (0, 1), 0.0), low(8, (2, 3), 50.0)), make_job(1, 6, qos="high"), (8,)),
        # same class: no preemption
        ((low(7, tuple(range(8)), 0.0),), make_job(1, 8, qos="low"), ()),
        # not preemptible: none
        ((make_running(7, "n0", tuple(range(8)), qos="low"),), make_job(1, 8, qos="high"), ()),
        # would not fit even after preempting everything preemptible: none
        (
            (low(7, (0, 1, 2, 3), 0.0), make_running(8, "n0", (4, 5, 6, 7), qos="low")),
            make_job(1, 8, qos="high"),
            (),
        ),
    ],
)
def test_victims(running, job, victims):
    plan = plan_of(make_snapshot(NODES, (job,), running, now=100.0))
    assert plan.preemptions == victims
    assert plan.placements == ()
    if victims:
        assert plan.est_start[job.id] == 100.0


def test_no_new_victims_while_earlier_ones_stop():
    running = (low(7, tuple(range(8)), 0.0, stopping=True), low(8, (), 10.0))
    plan = plan_of(make_snapshot(NODES, (make_job(1, 8, qos="high"),), running, now=100.0))
    assert plan.preemptions == ()


def test_preemption_can_be_turned_off():
    running = (low(7, tuple(range(8)), 0.0),)
    cfg = PolicyConfig(preemption=False)
    plan = plan_of(make_snapshot(NODES, (make_job(1, 8, qos="high"),), running, config=cfg))
    assert plan.preemptions == ()


def test_baselines_never_preempt():
    running = (low(7, tuple(range(8)), 0.0),)
    for policy in ("fifo", "fifo-backfill", "sjf-oracle"):
        plan = plan_of(make_snapshot(NODES, (make_job(1, 8, qos="high"),), running), policy)
        assert plan.preemptions == ()


def mixed_node() -> NodeView:
    """n0: GPUs 0-3 A100, 4-7 V100."""
    gpus = tuple(
        GpuView(i, "NVIDIA A100-SXM4-80GB" if i < 4 else "Tesla V100-SXM2-32GB", 80 * GIB)
        for i in range(8)
    )
    return NodeView("n0", gpus, cpus=32, memory=256 * GIB)


def test_gpus_of_another_type_neither_count_nor_get_preempted():
    # A100 0-1 held by a job that is not preemptible, V100 4-7 by a preemptible one: 4 A100
    # cannot be had, so nothing is stopped and no start now is promised
    running = (make_running(8, "n0", (0, 1), qos="low"), low(7, (4, 5, 6, 7), 50.0))
    job = make_job(1, 4, qos="high", gpu_type="A100")
    plan = plan_of(make_snapshot((mixed_node(),), (job,), running, now=100.0))
    assert plan.preemptions == ()
    assert plan.est_start.get(1) != 100.0


def test_a_victim_holding_only_unsuitable_gpus_is_spared():
    # job 9 (V100 only) started last, so it would go first; only job 7 frees A100s
    running = (low(7, (0, 1), 0.0), low(9, (4, 5, 6, 7), 50.0))
    job = make_job(1, 4, qos="high", gpu_type="A100")
    plan = plan_of(make_snapshot((mixed_node(),), (job,), running, now=100.0))
    assert plan.preemptions == (7,)
    assert plan.est_start[1] == 100.0


def test_cpus_must_fit_after_preemption():
    node = make_node("n0", 8, cpus=32, memory=256 * GIB)
    held = Allocation("n0", (4, 5, 6, 7), cpus=30, memory=0)
    keeps_cpus = RunningJob(8, "bob", "lab", (held,), 0.0, HOUR, qos="low")
    running = (low(7, (0, 1, 2, 3), 0.0), keeps_cpus)
    job = make_job(1, 4, qos="high", cpus=8)
    plan = plan_of(make_snapshot((node,), (job,), running, now=100.0))
    assert plan.preemptions == (), "job 8 keeps 30 of 32 CPUs and is not preemptible"
    assert plan.est_start.get(1) != 100.0
