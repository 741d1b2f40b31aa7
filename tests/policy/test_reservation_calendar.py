"""A reservation far in the future blocks only the jobs whose time limit reaches into it."""

from __future__ import annotations

import pytest

from rota.scheduler.policy import POLICIES, make_policy, reasons
from rota.scheduler.policy.config import DAY
from rota.scheduler.policy.snapshot import ReservationView
from tests.policy.builders import HOUR, make_job, make_node, make_running, make_snapshot, placed

NOW = 10 * HOUR
# node n1's GPUs are booked for carol from three days on; node n0 is never booked
LATER = ReservationView("later", NOW + 3 * DAY, NOW + 4 * DAY, {"n1": tuple(range(8))},
                        frozenset({"carol"}))  # fmt: skip
NO_LIMIT = 0.0  # the job gives none: the default (7 days) counts

# (nodes, GPUs per node, time limit, GPUs running jobs hold on n0) -> starts now?
TABLE = [
    pytest.param(2, 8, HOUR, 0, True, id="two-nodes-1h"),
    pytest.param(2, 4, 2 * DAY, 0, True, id="two-nodes-2d"),
    pytest.param(1, 8, HOUR, 8, True, id="one-node-1h-on-the-booked-node"),
    pytest.param(2, 8, 4 * DAY, 0, False, id="two-nodes-4d-reaches-the-window"),
    pytest.param(1, 8, 4 * DAY, 8, False, id="one-node-4d-reaches-the-window"),
    pytest.param(2, 8, NO_LIMIT, 0, False, id="two-nodes-no-limit"),
    pytest.param(1, 8, NO_LIMIT, 8, False, id="one-node-no-limit"),
]


def decide(job, busy: int, policy: str):
    running = (make_running(99, "n0", tuple(range(busy)), time_limit=10 * DAY),) if busy else ()
    snap = make_snapshot(
        (make_node("n0"), make_node("n1")), (job,), running, now=NOW, reservations=(LATER,)
    )
    return make_policy(policy, snap.config).decide(snap)


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize(("nodes", "gpus", "limit", "busy", "starts"), TABLE)
def test_a_far_reservation_blocks_only_jobs_that_reach_into_it(
    nodes, gpus, limit, busy, starts, policy
):
    job = make_job(1, gpus, user="bob", nodes=nodes, time_limit=limit)
    plan = decide(job, busy, policy)
    if starts:
        assert 1 in placed(plan), plan.reasons
        assert len(placed(plan)[1]) == nodes
    else:
        assert plan.placements == ()
        assert plan.reasons[1] == reasons.REQ_NODE_NOT_AVAIL
