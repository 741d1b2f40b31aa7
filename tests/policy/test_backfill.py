"""Ordering, backfill and reasons of the queue policies."""

from __future__ import annotations

import pytest

from rota.scheduler.policy import reasons
from rota.scheduler.policy.config import PolicyConfig
from tests.policy.builders import (
    HOUR,
    make_job,
    make_node,
    make_running,
    make_snapshot,
    placed,
    plan_of,
)

# One 8-GPU node, 6 GPUs busy for an hour: the 8-GPU head job waits; 2 GPUs stay idle.
NODE = (make_node("n0", 8),)
BUSY = (make_running(9, "n0", (0, 1, 2, 3, 4, 5), start=0.0, time_limit=HOUR),)
HEAD = make_job(1, 8, submit=0.0, time_limit=HOUR, qos="high")  # first in every order


@pytest.mark.parametrize(
    ("policy", "follower", "starts"),
    [
        ("fifo-backfill", make_job(2, 2, submit=1.0, time_limit=HOUR / 2), True),  # ends in time
        ("fifo-backfill", make_job(2, 2, submit=1.0, time_limit=2 * HOUR), False),  # would delay
        ("fifo", make_job(2, 2, submit=1.0, time_limit=HOUR / 2), False),  # strict FIFO
        ("rota", make_job(2, 2, submit=1.0, time_limit=HOUR / 2), True),
        ("rota", make_job(2, 2, submit=1.0, time_limit=2 * HOUR), False),
    ],
)
def test_backfill_never_delays_the_reserved_head(policy, follower, starts):
    plan = plan_of(make_snapshot(NODE, (HEAD, follower), BUSY, now=10.0), policy)
    assert (follower.id in placed(plan)) is starts
    assert plan.reasons[1] == reasons.RESOURCES
    assert plan.est_start[1] == pytest.approx(HOUR)
    if not starts:
        assert plan.reasons[2] == reasons.PRIORITY


def test_blocked_reason_is_passed_through():
    jobs = (
        make_job(1, 1, blocked=reasons.HELD_USER),
        make_job(2, 1, blocked=reasons.DEPENDENCY),
        make_job(3, 1, blocked=reasons.BEGIN_TIME),
    )
    for policy in ("rota", "fifo", "fifo-backfill", "sjf-oracle", "first-fit"):
        plan = plan_of(make_snapshot(NODE, jobs), policy)
        assert plan.placements == ()
        assert plan.reasons == {1: reasons.HELD_USER, 2: reasons.DEPENDENCY, 3: reasons.BEGIN_TIME}


def test_default_time_limit_applies_to_jobs_without_one():
    cfg = PolicyConfig(default_time_limit=HOUR / 4)
    follower = make_job(2, 2, submit=1.0, time_limit=0)  # none: the default, 15 minutes
    plan = plan_of(make_snapshot(NODE, (HEAD, follower), BUSY, config=cfg), "fifo-backfill")
    assert 2 in placed(plan)


def test_conservative_depth_protects_the_first_k():
    nodes = (make_node("n0", 8), make_node("n1", 8))
    running = (
        make_running(8, "n0", (0, 1, 2, 3, 4, 5), time_limit=HOUR),
        make_running(9, "n1", (0, 1, 2, 3, 4, 5), time_limit=1.5 * HOUR),
    )
    jobs = (
        make_job(1, 8, submit=0, time_limit=HOUR),
        make_job(2, 8, submit=1, time_limit=HOUR),
        make_job(3, 2, submit=2, time_limit=3 * HOUR),  # would delay job 2 on n1
    )
    deep = plan_of(make_snapshot(nodes, jobs, running), "fifo-backfill")
    assert deep.placements == ()
    assert deep.est_start == {1: HOUR, 2: 1.5 * HOUR, 3: 2 * HOUR}
    shallow = plan_of(
        make_snapshot(nodes, jobs, running, config=PolicyConfig(backfill_depth=1)), "fifo-backfill"
    )
    assert 3 in placed(shallow)


def test_sjf_oracle_orders_by_true_duration():
    jobs = (
        make_job(1, 8, submit=0, true_duration=3 * HOUR),
        make_job(2, 8, submit=1, true_duration=HOUR),
    )
    plan = plan_of(make_snapshot(NODE, jobs), "sjf-oracle")
    assert placed(plan) == {2: [("n0", tuple(range(8)))]}
    assert plan.est_start[1] == pytest.approx(HOUR)


def test_stopping_jobs_count_as_released_now():
    running = (make_running(9, "n0", tuple(range(8)), stopping=True),)
    plan = plan_of(make_snapshot(NODE, (HEAD,), running, now=5.0))
    assert plan.placements == ()
    assert plan.est_start[1] == pytest.approx(5.0)


def test_partial_reasons_mode_still_places_the_same():
    jobs = tuple(make_job(i, 1 + i % 3, submit=i) for i in range(1, 20))
    full = plan_of(make_snapshot(NODE, (HEAD, *jobs), BUSY))
    quick = plan_of(make_snapshot(NODE, (HEAD, *jobs), BUSY, full_reasons=False))
    assert quick.placements == full.placements
