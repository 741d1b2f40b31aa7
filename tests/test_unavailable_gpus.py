"""Unavailable GPUs (drained, DOWN, unhealthy, under MAINT) are free nowhere, and users may
not book them: the refusal says why; administrators may."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.scheduler.cluster.status import free_gpus
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.errors import Conflict
from rota.scheduler.core.reservations import ReservationRequest
from rota.scheduler.web import views
from tests.support.core import Harness

HOUR = 3600.0
ROOT = Principal("root", admin=True)
ANN = Principal("ann")


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    harness = Harness(tmp_path)
    for name in ("n1", "n2", "n3", "n4"):
        harness.connect(name, gpus=2)
    harness.s.nodes.drain("n2", "bad fan", "root")
    harness.s.agents.disconnected("n3", harness.sessions["n3"])
    harness.s.gpus.drain("n4", 1, "root", "ECC errors")
    return harness


def book(h: Harness, who: Principal, name: str, start: float = 0.0, **kw: object):
    at = h.clock.now + start
    fields = {"users": ("ann",), **kw}
    request = ReservationRequest(name, at, at + HOUR, **fields)  # type: ignore[arg-type]
    return h.s.reservations.create(request, who)


def test_free_counts_leave_out_drained_down_unhealthy_and_maint_gpus(h: Harness) -> None:
    book(h, ROOT, "fix", nodes=("n1",), users=("root",), flags=("MAINT",))
    summary = h.s.nodes.page(0, "", True, False, (), h.s.reservations.maintenance_now()).summary
    assert summary is not None
    assert (summary.gpus_total, summary.gpus_free) == (8, 1)  # only n4's GPU 0
    booked = h.s.reservations.on_nodes(["n1", "n2", "n3", "n4"])
    per_node = {}
    for name in ("n1", "n2", "n3", "n4"):
        node, status = h.s.nodes.show(name)
        maint = booked[name].gpus_maint if name in booked else frozenset()
        per_node[name] = free_gpus(node, status, maint)
        assert views.node_json(node, status, {}, 0, maint)["gpus_free"] == per_node[name]
    assert per_node == {"n1": 0, "n2": 0, "n3": 0, "n4": 1}
    assert sum(per_node.values()) == summary.gpus_free


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"nodes": ("n2",)}, "nodes: node n2 is drained: bad fan"),
        ({"nodes": ("n3",)}, r"nodes: node n3 is DOWN \(agent not connected\)"),
        ({"gpu_ids": {"n4": (1,)}}, "gpus: GPU 1 of n4 is unhealthy: ECC errors"),
    ],
)
def test_a_user_booking_an_unavailable_gpu_is_refused_with_the_reason(
    h: Harness, fields: dict[str, object], reason: str
) -> None:
    with pytest.raises(Conflict, match=reason):
        book(h, ANN, "mine", start=24 * HOUR, **fields)
    assert h.s.reservations.all() == []
    book(h, ROOT, "admins-may", start=24 * HOUR, **fields)  # e.g. resumed before the window


def test_a_user_booking_under_a_maint_window_is_refused_naming_it(h: Harness) -> None:
    book(h, ROOT, "fix", start=2 * HOUR, nodes=("n1",), users=("root",), flags=("MAINT",))
    with pytest.raises(Conflict, match=r"n1 is under maintenance \(fix\) then"):
        book(h, ANN, "mine", start=2 * HOUR, nodes=("n1",))
    book(h, ANN, "before", nodes=("n1",))  # the hour before the window is fine


def test_gpus_n_skips_unavailable_gpus_and_a_shortfall_says_why(h: Harness) -> None:
    assert book(h, ANN, "one", gpus=2).gpus == {"n1": (0, 1)}
    assert book(h, ANN, "two", gpus=1).gpus == {"n4": (0,)}
    with pytest.raises(Conflict) as refused:
        book(h, ANN, "three", gpus=1)
    text = str(refused.value)
    assert "reserved by one, two" in text
    assert "node n2 is drained: bad fan" in text
    assert "GPU 1 of n4 is unhealthy: ECC errors" in text
