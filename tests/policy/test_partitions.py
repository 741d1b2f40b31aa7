"""Table-driven tests of partitions in the policy: a job runs only on nodes of one of its
partitions (``-p a,b``: either), and a higher priority tier goes first."""

from __future__ import annotations

import pytest

from rota.scheduler.policy import reasons
from tests.policy.builders import make_job, make_node, make_snapshot, placed, plan_of

# "a" holds a0 and shared, "b" holds b0 and shared, "debug" only d0
NODES = (
    make_node("a0", 2, partitions=frozenset({"a"})),
    make_node("b0", 2, partitions=frozenset({"b"})),
    make_node("d0", 8, partitions=frozenset({"debug"})),
)


@pytest.mark.parametrize(
    ("partitions", "gpus", "where"),
    [
        (("a",), 1, {"a0"}),
        (("b",), 2, {"b0"}),
        (("a", "b"), 2, {"a0", "b0"}),
        (("debug",), 8, {"d0"}),
        ((), 8, {"d0"}),  # names none (a job from before partitions): anywhere
        (("a",), 4, None),  # fits only d0, which is not in "a"
        (("a", "b"), 8, None),
    ],
)
@pytest.mark.parametrize("policy", ["rota", "fifo-backfill", "fifo", "first-fit"])
def test_jobs_run_only_on_their_partitions_nodes(partitions, gpus, where, policy):
    job = make_job(gpus=gpus, partitions=partitions)
    plan = plan_of(make_snapshot(NODES, (job,)), policy)
    if where is None:
        assert plan.placements == ()
        if policy != "first-fit":  # first-fit names no constraint reason for anything
            assert plan.reasons[job.id] == reasons.BAD_CONSTRAINTS
    else:
        assert placed(plan)[job.id][0][0] in where


def test_a_list_of_partitions_uses_the_second_when_the_first_is_full():
    first = make_job(1, gpus=2, partitions=("a",), submit=0.0)
    either = make_job(2, gpus=2, partitions=("a", "b"), submit=1.0)
    plan = plan_of(make_snapshot(NODES, (first, either)))
    got = placed(plan)
    assert got[1][0][0] == "a0"
    assert got[2][0][0] == "b0"


def test_a_higher_priority_tier_goes_first():
    older = make_job(1, gpus=2, partitions=("a",), submit=0.0)
    tiered = make_job(2, gpus=2, partitions=("a",), submit=100.0, priority_tier=1)
    plan = plan_of(make_snapshot(NODES, (older, tiered), now=200.0))
    assert placed(plan)[2][0][0] == "a0"
    assert 1 not in placed(plan)
