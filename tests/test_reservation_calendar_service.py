"""The reservation calendar in the daemon: reads never write, the tick's ``advance`` does, and
a window days ahead on one node does not keep a short gang off it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.messages import LaunchOrder
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.reservations import ReservationRequest
from rota.scheduler.policy import reasons
from tests.support.core import Harness

HOUR = 3600.0
DAY = 24 * HOUR
ROOT = Principal("root", admin=True)


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    harness = Harness(tmp_path)
    harness.connect("n1", gpus=2)
    harness.connect("n2", gpus=2)
    return harness


def book(h: Harness, name: str, start: float, hours: float, **kw: object) -> None:
    at = h.clock.now + start
    fields = {"users": ("bob",), **kw}
    request = ReservationRequest(name, at, at + hours * HOUR, **fields)  # type: ignore[arg-type]
    h.s.reservations.create(request, ROOT)


def launched(orders: list) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for node, order in orders:
        if isinstance(order, LaunchOrder):
            out.setdefault(order.job_id, set()).add(node)
    return out


@pytest.mark.parametrize("limit", [HOUR, 0.0])  # 0: the default limit (24 h) ends before it
def test_a_two_node_job_starts_before_a_window_three_days_ahead_on_one_node(
    h: Harness, limit: float
) -> None:
    book(h, "later", 3 * DAY, 24, nodes=("n2",))
    short = h.submit(gpus=2, nodes=2, time_limit=limit)
    assert launched(h.schedule()) == {int(short): {"n1", "n2"}}


def test_a_two_node_job_that_would_run_into_the_window_waits(h: Harness) -> None:
    book(h, "later", 12 * HOUR, 24, nodes=("n2",))
    long = h.submit(gpus=2, nodes=2, time_limit=DAY)
    unlimited = h.submit(gpus=2, nodes=2)  # the default limit (24 h) reaches into it
    assert launched(h.schedule()) == {}
    for job in (long, unlimited):
        assert h.s.jobs.get(job)[0].reason == reasons.REQ_NODE_NOT_AVAIL


def test_reads_after_a_window_ended_change_nothing_until_the_tick(h: Harness) -> None:
    book(h, "lab", 0.0, 1, nodes=("n2",), users=("ann",))
    h.submit(gpus=2, reservation="lab")
    h.schedule()
    late = h.submit(gpus=2, reservation="lab")  # waits: the first holds the GPUs
    h.schedule()
    h.clock.now += 2 * HOUR
    service = h.s.reservations
    assert service.all() == []
    assert service.views(h.clock.now) == ()
    assert service.on_nodes(["n2"]) == {}
    assert not h.s.jobs.get(late)[0].held  # a read holds nobody
    h.tick()
    assert h.s.jobs.get(late)[0].held


def test_a_daily_window_is_seen_moved_on_before_the_tick_stores_it(h: Harness) -> None:
    book(h, "standup", 0.0, 1, nodes=("n2",), flags=("DAILY",))
    start = h.clock.now
    h.clock.now += 2 * HOUR
    (seen,) = h.s.reservations.all()
    assert seen.start == start + DAY
    assert h.s.reservations.edges()[0] == start + DAY
    h.restart()  # nothing was written: the ended window was not stored as moved
    assert h.s.reservations.all() == []
