"""Users' DAILY and WEEKLY bookings (``reservations.users_may_repeat``, on by default): each
window within the user caps, the repeats counted in ``max_hours_per_week``; off, repeating is
for admins only and the refusal names the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.errors import AccessDenied, Conflict
from rota.scheduler.core.reservation_gpus import ReservationRequest
from tests.support.core import Harness

HOUR = 3600.0
DAY = 24 * HOUR
ANN = Principal("ann")


def daily(h: Harness, name: str, hours: float, gpus: int = 2, ahead: float = HOUR) -> None:
    at = h.clock.now + ahead
    request = ReservationRequest(
        name, at, at + hours * HOUR, gpus=gpus, users=("ann",), flags=("daily",)
    )
    h.s.reservations.create(request, ANN)


def test_a_users_daily_booking_within_the_caps_is_accepted_and_recurs(tmp_path: Path) -> None:
    h = Harness(tmp_path, reservations={"max_hours_per_week": 60, "max_hours": 8})
    h.connect("n1", gpus=16)
    daily(h, "standup", hours=8)  # 7 windows of 8 h: 56 h a week
    r = h.s.reservations.live["standup"]
    assert r.flags == ("DAILY",) and r.created_by == "ann"
    assert len(r.windows(r.start, r.start + 7 * DAY)) == 7
    with pytest.raises(Conflict, match="cap max_gpus: a booking may hold at most 8 GPUs"):
        daily(h, "wide", hours=1, gpus=9)
    with pytest.raises(Conflict, match="cap max_hours: a booking may last at most 8 h"):
        daily(h, "long", hours=9)


def test_a_users_repeats_count_against_the_weekly_cap(tmp_path: Path) -> None:
    h = Harness(tmp_path, reservations={"max_hours_per_week": 50})
    h.connect("n1", gpus=8)
    with pytest.raises(Conflict, match=r"cap max_hours_per_week: .* would hold 56 h"):
        daily(h, "standup", hours=8)  # 56 h of windows in a week, over 50
    daily(h, "short", hours=7)  # 49 h a week
    with pytest.raises(Conflict, match="cap max_hours_per_week"):
        daily(h, "more", hours=1)  # 7 h more a week
    assert sorted(h.s.reservations.live) == ["short"]


def test_a_daily_booking_counts_against_a_later_week_already_booked(tmp_path: Path) -> None:
    """The cap holds in every week the repeats reach, not only the first."""
    h = Harness(tmp_path, reservations={"max_hours_per_week": 100})
    h.connect("n1", gpus=8)
    at = h.clock.now + 20 * DAY
    h.s.reservations.create(
        ReservationRequest("later", at, at + 80 * HOUR, gpus=1, users=("ann",)), ANN
    )
    with pytest.raises(Conflict, match="the 7 days from a later booking of yours would hold"):
        daily(h, "standup", hours=4)  # 28 h a week: 108 h in the week of "later"
    daily(h, "standup", hours=2)  # 14 h a week: 94 h then


def test_repeating_is_for_admins_only_when_the_setting_is_off(tmp_path: Path) -> None:
    h = Harness(tmp_path, reservations={"users_may_repeat": False})
    h.connect("n1", gpus=8)
    with pytest.raises(AccessDenied, match=r"reservations\.users_may_repeat is false"):
        daily(h, "standup", hours=1)
    assert h.s.reservations.live == {}
    at = h.clock.now + HOUR
    admin = ReservationRequest("standup", at, at + HOUR, gpus=2, users=("ann",), flags=("WEEKLY",))
    h.s.reservations.create(admin, Principal("root", admin=True))
    assert h.s.reservations.live["standup"].flags == ("WEEKLY",)
