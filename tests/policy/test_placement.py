"""Placement: best fit across nodes, topology inside a node, gangs all-or-nothing."""

from __future__ import annotations

import pytest

from rota.scheduler.policy import reasons
from rota.scheduler.policy.topology import choose_gpus, level_rank
from tests.policy.builders import (
    make_job,
    make_node,
    make_nodes,
    make_running,
    make_snapshot,
    placed,
    plan_of,
)


def test_best_fit_keeps_whole_nodes_free():
    nodes = make_nodes(3)
    running = (make_running(9, "n1", (0, 1, 2, 3, 4)),)  # n1 has 3 free
    plan = plan_of(make_snapshot(nodes, (make_job(1, 2),), running))
    assert placed(plan)[1][0][0] == "n1"


def test_small_jobs_pack_so_an_eight_gpu_job_still_fits():
    nodes = make_nodes(2)
    jobs = (*tuple(make_job(i, 1, submit=i) for i in range(1, 5)), make_job(5, 8, submit=5))
    plan = plan_of(make_snapshot(nodes, jobs), "fifo-backfill")
    got = placed(plan)
    assert {got[i][0][0] for i in range(1, 5)} == {"n0"}
    assert got[5][0][0] == "n1"


LINKS = {
    (a, b): ("NV12" if a // 4 == b // 4 else "SYS") for a in range(8) for b in range(8) if a < b
}


@pytest.mark.parametrize(
    ("busy", "want", "expected"),
    [
        ((), 4, (0, 1, 2, 3)),
        ((0,), 4, (4, 5, 6, 7)),  # 1,2,3 + one across the switch loses to a full quad
        ((0, 4), 2, (1, 2)),
        ((0, 1, 2, 4), 2, (5, 6)),  # 3 alone on its switch, take a pair on the other
    ],
)
def test_topology_prefers_gpus_on_one_switch(busy, want, expected):
    free = [g for g in range(8) if g not in busy]
    assert choose_gpus(free, want, LINKS) == expected


def test_topology_used_by_the_policy():
    node = make_node("n0", 8, links=LINKS)
    running = (make_running(9, "n0", (0,)),)
    plan = plan_of(make_snapshot((node,), (make_job(1, 4),), running))
    assert placed(plan)[1] == [("n0", (4, 5, 6, 7))]


@pytest.mark.parametrize(
    ("level", "rank"), [("SAME", 0), ("NV4", 1), ("PIX", 2), ("SYS", 6), ("??", 7)]
)
def test_level_ranks(level, rank):
    assert level_rank(level) == rank


def test_gang_takes_distinct_nodes_or_none():
    nodes = make_nodes(3)
    running = (make_running(9, "n2", (0, 1, 2, 3, 4, 5)),)
    gang = make_job(1, 8, nodes=2)
    plan = plan_of(make_snapshot(nodes, (gang,), running))
    assert sorted(n for n, _ in placed(plan)[1]) == ["n0", "n1"]
    too_big = make_job(2, 8, nodes=3)
    plan = plan_of(make_snapshot(nodes, (too_big,), running))
    assert plan.placements == ()
    assert plan.reasons[2] == reasons.RESOURCES
    assert plan.est_start[2] == pytest.approx(3600.0)


def test_gang_wider_than_cluster_is_bad_constraints():
    plan = plan_of(make_snapshot(make_nodes(2), (make_job(1, 8, nodes=3),)))
    assert plan.reasons[1] == reasons.BAD_CONSTRAINTS
