"""Exclusive jobs and jobs that need no GPU around reservations (counterexamples of the
property ``test_backfill_never_delays_the_top_job``, written out)."""

from __future__ import annotations

import pytest

from rota.scheduler.policy import reasons
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.snapshot import GpuView, NodeView, Plan, RunningJob, Snapshot
from tests.policy.builders import HOUR, make_job, make_running, make_snapshot, plan_of

NOW = 100.0


def one_gpu_nodes(count: int) -> tuple[NodeView, ...]:
    """Nodes with one usable GPU each (index 0 is not allocatable)."""
    gpus = (GpuView(0, "A100", allocatable=False), GpuView(1, "A100"))
    return tuple(NodeView(f"n{i}", gpus) for i in range(count))


def after_placements(snap: Snapshot, plan: Plan, policy: str) -> Plan:
    """The same pass once the plan's placements run (exclusive ones hold their node)."""
    placed = {p.job_id: p for p in plan.placements}
    running = snap.running + tuple(
        RunningJob(
            j.id,
            j.user,
            j.account,
            placed[j.id].allocations,
            snap.now,
            j.time_limit,
            exclusive=j.exclusive,
        )
        for j in snap.pending
        if j.id in placed
    )
    pending = tuple(j for j in snap.pending if j.id not in placed)
    return plan_of(Snapshot(snap.now, snap.nodes, pending, running, config=snap.config), policy)


def assert_top_not_delayed(snap: Snapshot, policy: str, top: int) -> Plan:
    plan = plan_of(snap, policy)
    assert plan.reasons[top] == reasons.RESOURCES
    again = after_placements(snap, plan, policy)
    assert again.est_start[top] <= plan.est_start[top]
    return plan


@pytest.mark.parametrize("exclusive", [False, True])
def test_gang_waiting_on_a_preemption_keeps_its_free_node(exclusive):
    # An exclusive gang on both nodes preempts the low job on n0; n1 is free. A job of no
    # GPU (exclusive or not) must not take n1: once it ran, the gang could only start when
    # the low job ends (1800), not now.
    snap = make_snapshot(
        one_gpu_nodes(2),
        (
            make_job(1, 0, nodes=2, exclusive=True, qos="high", time_limit=2 * HOUR),
            make_job(2, 0, qos="low", exclusive=exclusive, time_limit=5 * HOUR),
        ),
        (make_running(9, "n0", (1,), qos="low", preemptible=True, time_limit=HOUR / 2),),
        now=NOW,
    )
    plan = assert_top_not_delayed(snap, "rota", 1)
    assert plan.preemptions == (9,)
    assert plan.est_start[1] == NOW
    assert plan.placements == ()
    assert plan.reasons[2] == reasons.PRIORITY


def test_gang_of_no_gpu_keeps_its_reservation_from_exclusive_jobs():
    # sjf-oracle runs the short exclusive job 1 on n1 first; the gang of no GPU (job 2)
    # reserves both nodes from 1900; the exclusive job 3 may not take n0 past that.
    snap = make_snapshot(
        one_gpu_nodes(2),
        (
            make_job(1, 0, exclusive=True, time_limit=HOUR / 2),
            make_job(2, 0, nodes=2, time_limit=HOUR),
            make_job(3, 0, exclusive=True, time_limit=2 * HOUR),
        ),
        now=NOW,
        config=PolicyConfig(backfill_depth=1),
    )
    plan = assert_top_not_delayed(snap, "sjf-oracle", 2)
    assert [p.job_id for p in plan.placements] == [1]
    assert plan.est_start[2] == NOW + HOUR / 2
    assert plan.reasons[3] == reasons.PRIORITY


@pytest.mark.parametrize("policy", ["rota", "fifo-backfill"])
def test_job_of_no_gpu_never_shares_an_exclusive_node(policy):
    # n0 runs an exclusive job; n1 gets exclusive job 1 in this pass: job 2 (no GPU) fits
    # neither until they end.
    snap = make_snapshot(
        one_gpu_nodes(2),
        (make_job(1, 1, exclusive=True), make_job(2, 0, submit=1.0)),
        (make_running(9, "n0", (1,), exclusive=True, time_limit=HOUR),),
        now=NOW,
    )
    plan = plan_of(snap, policy)
    assert [p.job_id for p in plan.placements] == [1]
    assert plan.reasons[2] == reasons.RESOURCES
    assert plan.est_start[2] == HOUR  # n0's exclusive job ends first


def test_exclusive_job_waits_for_jobs_of_no_gpu():
    # A job of no GPU runs on n0 until 5 h: an exclusive job can start there only then,
    # though the GPU frees at 1 h.
    snap = make_snapshot(
        one_gpu_nodes(1),
        (make_job(1, 1, exclusive=True),),
        (
            make_running(8, "n0", (), time_limit=5 * HOUR),
            make_running(9, "n0", (1,), time_limit=HOUR),
        ),
        now=NOW,
    )
    plan = plan_of(snap, "rota")
    assert plan.reasons[1] == reasons.RESOURCES
    assert plan.est_start[1] == 5 * HOUR
