"""Per-user and per-account limits and job-array % limits."""

from __future__ import annotations

import pytest

from rota.scheduler.policy import reasons
from rota.scheduler.policy.config import Limits, PolicyConfig
from tests.policy.builders import make_job, make_nodes, make_running, make_snapshot, placed, plan_of

NODES = make_nodes(2)


@pytest.mark.parametrize(
    ("limits", "running", "jobs", "started", "why"),
    [
        (
            Limits(max_gpus_per_user=4),
            (),
            [(1, 2), (2, 2), (3, 2)],
            {1, 2},
            reasons.QOS_MAX_GRES_PER_USER,
        ),
        (
            Limits(max_gpus_per_user=4),
            (make_running(9, "n0", (0, 1, 2), user="alice"),),
            [(1, 2), (2, 1)],
            {2},
            reasons.QOS_MAX_GRES_PER_USER,
        ),
        (
            Limits(max_gpus_per_account=3),
            (),
            [(1, 2), (2, 2), (3, 1)],
            {1, 3},
            reasons.QOS_MAX_GRES_PER_ACCOUNT,
        ),
        (
            Limits(max_pending_per_user=2),
            (),
            [(1, 1), (2, 1), (3, 1)],
            {1, 2},
            reasons.QOS_MAX_SUBMIT_PER_USER,
        ),
        (
            Limits(max_pending_per_account=1),
            (),
            [(1, 1), (2, 1)],
            {1},
            reasons.QOS_MAX_SUBMIT_PER_ACCOUNT,
        ),
    ],
)
@pytest.mark.parametrize("policy", ["rota", "fifo-backfill", "fifo", "sjf-oracle"])
def test_limits(limits, running, jobs, started, why, policy):
    pending = tuple(make_job(i, g, user="alice", submit=i) for i, g in jobs)
    plan = plan_of(
        make_snapshot(NODES, pending, running, config=PolicyConfig(limits=limits)), policy
    )
    assert set(placed(plan)) == started
    for i, _ in jobs:
        if i not in started:
            assert plan.reasons[i] == why


def test_limits_do_not_block_other_users():
    cfg = PolicyConfig(limits=Limits(max_gpus_per_user=1))
    jobs = (
        make_job(1, 1, user="a"),
        make_job(2, 1, user="a", submit=1),
        make_job(3, 1, user="b", submit=2),
    )
    plan = plan_of(make_snapshot(NODES, jobs, config=cfg))
    assert set(placed(plan)) == {1, 3}


def test_array_task_limit():
    running = (make_running(9, "n0", (0,), array_job_id=100),)
    tasks = tuple(
        make_job(i, 1, submit=i, array_job_id=100, array_task_limit=3) for i in range(1, 6)
    )
    plan = plan_of(make_snapshot(NODES, tasks, running))
    assert len(plan.placements) == 2
    assert sorted(plan.reasons.values()) == [reasons.ARRAY_TASK_LIMIT] * 3
