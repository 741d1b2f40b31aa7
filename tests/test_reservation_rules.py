"""Reservations in-process, beyond create/delete: who may book and the caps, update, the flags
DAILY, WEEKLY, FLEX and PURGE_COMP, the usage report, the clock's edges and the CSV import."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.messages import LaunchOrder
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.errors import AccessDenied, Conflict, UserError
from rota.scheduler.core.reservations import ReservationRequest
from rota.states import JobState
from tests.support.core import Harness

HOUR = 3600.0
DAY = 24 * HOUR
ROOT = Principal("root", admin=True)
PEOPLE = {
    "root": ROOT,
    "ann": Principal("ann", accounts=("ann", "vision")),
    "bob": Principal("bob"),
}


def harness(tmp_path: Path, **config: object) -> Harness:
    h = Harness(tmp_path, **config)
    h.connect("n1", gpus=4)
    h.connect("n2", gpus=2)
    return h


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return harness(tmp_path)


def request(h: Harness, name: str, start: float = 0.0, hours: float = 2.0, **kw: object):
    at = h.clock.now + start
    fields = {"users": ("ann",), **kw}
    return ReservationRequest(name, at, at + hours * HOUR, **fields)  # type: ignore[arg-type]


def book(h: Harness, name: str, by: str = "root", **kw: object):
    return h.s.reservations.create(request(h, name, **kw), PEOPLE[by])  # type: ignore[arg-type]


def test_users_book_for_themselves_and_their_accounts_admins_for_anyone(tmp_path: Path) -> None:
    h = harness(tmp_path)
    with pytest.raises(AccessDenied, match="users: bob may book only for themselves, not ann"):
        book(h, "x", by="bob", nodes=("n1",), users=("ann",))
    with pytest.raises(
        AccessDenied, match=r"accounts: bob may book only for their accounts \(bob\)"
    ):
        book(h, "x", by="bob", nodes=("n1",), users=(), accounts=("vision",))
    book(h, "mine", by="ann", nodes=("n2",), users=(), accounts=("vision",))
    book(h, "theirs", by="root", nodes=("n1",), users=("bob",))
    with pytest.raises(AccessDenied, match="made by root; only they and admins"):
        h.s.reservations.delete("theirs", PEOPLE["bob"])
    assert [r.name for r in h.s.reservations.all()] == ["mine", "theirs"]


@pytest.mark.parametrize(
    ("caps", "kw", "cap"),
    [
        ({"max_gpus": 2}, {"gpus": 3}, "cap max_gpus: a booking may hold at most 2 GPUs"),
        ({"max_hours": 4}, {"gpus": 1, "hours": 5}, "cap max_hours"),
        ({"max_days_ahead": 1}, {"gpus": 1, "start": 2 * DAY}, "cap max_days_ahead"),
    ],
)
def test_a_users_booking_over_a_cap_is_refused_naming_the_cap(
    tmp_path: Path, caps: dict[str, object], kw: dict[str, object], cap: str
) -> None:
    h = harness(tmp_path, reservations=caps)
    with pytest.raises(Conflict, match=cap):
        book(h, "big", by="ann", **kw)
    assert h.s.reservations.all() == []
    book(h, "admin", by="root", **kw)  # caps bind users, not admins


def test_the_weekly_cap_counts_a_users_other_bookings(tmp_path: Path) -> None:
    h = harness(tmp_path, reservations={"max_hours_per_week": 10})
    book(h, "a", by="ann", gpus=1, hours=6, start=DAY)
    with pytest.raises(Conflict, match=r"cap max_hours_per_week: .* would hold 12 h"):
        book(h, "b", by="ann", gpus=1, hours=6)
    book(h, "c", by="ann", gpus=1, hours=4)


def test_update_changes_only_what_is_given_and_checks_overlaps(h: Harness) -> None:
    book(h, "lab", nodes=("n1",))
    book(h, "next", nodes=("n1",), start=3 * HOUR)
    later = h.clock.now + 4 * HOUR
    with pytest.raises(Conflict, match="reserved by next"):
        h.s.reservations.update("lab", request(h, "lab", hours=4), ["end"], ROOT)
    r = h.s.reservations.update("lab", ReservationRequest("lab", 0, 0, users=("bob",)),
                                ["users"], ROOT)  # fmt: skip
    assert r.users == ("bob",) and r.gpus == {"n1": (0, 1, 2, 3)}
    moved = h.s.reservations.update("lab", ReservationRequest("lab", 0, 0, gpus=2),
                                    ["gpus"], ROOT)  # fmt: skip
    assert moved.gpus == {"n1": (0, 1)}
    with pytest.raises(UserError, match="name: cannot be updated"):
        h.s.reservations.update("lab", ReservationRequest("x", 0, later), ["name"], ROOT)


def test_update_keeps_the_gpus_of_a_reservation_with_running_jobs(h: Harness) -> None:
    book(h, "lab", nodes=("n2",), users=("ann",))
    h.submit(gpus=1, reservation="lab")
    h.schedule()
    with pytest.raises(Conflict, match="has running jobs"):
        h.s.reservations.update("lab", ReservationRequest("lab", 0, 0, gpus=1), ["gpus"], ROOT)
    end = h.clock.now + 5 * HOUR
    assert (
        h.s.reservations.update("lab", ReservationRequest("lab", 0, end), ["end"], ROOT).end == end
    )


def test_a_daily_reservation_moves_to_its_next_window(h: Harness) -> None:
    first = book(h, "standup", nodes=("n2",), flags=("DAILY",), hours=1)
    start = first.start
    with pytest.raises(Conflict, match="reserved by standup"):
        book(h, "tomorrow", nodes=("n2",), start=DAY + HOUR / 2, hours=1)
    book(h, "evening", nodes=("n2",), start=2 * HOUR, hours=1)
    h.clock.now += HOUR + 1
    assert start + DAY in h.s.reservations.edges()  # the clock wakes up then
    (r,) = [r for r in h.s.reservations.all() if r.name == "standup"]
    assert (r.start, r.end) == (start + DAY, start + DAY + HOUR)
    h.tick()  # the tick stores the move
    h.restart()  # kept across a restart
    assert [r.start for r in h.s.reservations.all() if r.name == "standup"] == [start + DAY]


def test_a_weekly_booking_over_a_daily_one_is_refused(h: Harness) -> None:
    book(h, "standup", nodes=("n2",), flags=("DAILY",), hours=1, start=3 * DAY)
    with pytest.raises(Conflict, match="reserved by standup"):
        book(h, "seminar", nodes=("n2",), flags=("WEEKLY",), hours=2)


def test_purge_comp_deletes_the_reservation_after_its_last_job(h: Harness) -> None:
    book(h, "run", nodes=("n2",), flags=("PURGE_COMP",))
    job = h.submit(gpus=1, reservation="run")
    h.schedule()
    assert h.s.reservations.advance(h.clock.now) == []  # its job is running
    h.event("n2", job, "STARTED")
    h.clock.now += 60
    h.event("n2", job, "EXITED", exit_code=0)
    assert h.state(job) is JobState.COMPLETED
    assert h.s.reservations.advance(h.clock.now) == ["run"]
    assert h.s.reservations.all() == []


def test_flex_jobs_start_before_the_window_and_are_not_cut_at_its_end(h: Harness) -> None:
    book(h, "flex", nodes=("n2",), flags=("FLEX",), start=HOUR, hours=1)
    early = h.submit(gpus=1, time_limit=3 * HOUR, reservation="flex")
    orders = h.schedule()
    (launch,) = [o for _, o in orders if isinstance(o, LaunchOrder)]
    assert launch.job_id == int(early) and launch.time_limit == 3 * HOUR
    book(h, "strict", nodes=("n2",), hours=1)
    job = h.submit(gpus=1, time_limit=3 * HOUR, reservation="strict")
    (clipped,) = [o for _, o in h.schedule() if isinstance(o, LaunchOrder)]
    assert clipped.job_id == int(job) and clipped.time_limit == HOUR


def test_show_reports_owner_used_lent_and_idle_gpu_time(h: Harness) -> None:
    book(h, "lab", nodes=("n1",), hours=4)
    h.submit(gpus=2)  # fills n2
    borrower = h.submit(gpus=1, preemptible=True)
    mine = h.submit(gpus=2, reservation="lab")
    h.schedule()
    assert h.s.jobs.get(borrower)[0].allocation[0].node == "n1"
    h.event("n1", mine, "STARTED")
    h.event("n1", borrower, "STARTED")
    h.clock.now += HOUR
    usage = h.s.reservations.usage("lab")
    assert usage.booked == pytest.approx(4 * HOUR)
    assert usage.owners == pytest.approx(2 * HOUR)
    assert usage.lent == pytest.approx(HOUR)
    assert usage.idle == pytest.approx(HOUR)


def test_import_creates_nothing_when_a_row_conflicts_unless_skip_bad(h: Harness) -> None:
    rows = [request(h, "a", nodes=("n1",)), request(h, "b", nodes=("n1",), start=HOUR),
            request(h, "c", nodes=("n2",))]  # fmt: skip
    errors, created = h.s.reservations.import_many(rows, ROOT, False, False)
    assert not created and errors[0] is None and errors[2] is None
    assert errors[1] is not None and "reserved by a" in errors[1]
    assert h.s.reservations.all() == []
    errors, created = h.s.reservations.import_many(rows, ROOT, False, True)
    assert created and [r.name for r in h.s.reservations.all()] == ["a", "c"]


def test_an_import_with_a_row_for_someone_else_is_refused_whole(h: Harness) -> None:
    rows = [request(h, "own", nodes=("n1",), users=("bob",)), request(h, "x", nodes=("n2",))]
    with pytest.raises(AccessDenied, match="booking x: users: bob may book only for themselves"):
        h.s.reservations.import_many(rows, PEOPLE["bob"], False, True)
    assert h.s.reservations.all() == []


def test_nodes_show_gpus_reserved_now_and_next_and_maintenance(h: Harness) -> None:
    book(h, "lab", nodes=("n1",), gpus=2, hours=1)
    book(h, "exp", nodes=("n2",), start=3 * HOUR)
    book(h, "fix", nodes=("n2",), flags=("MAINT",), users=("root",), hours=1)
    shown = h.s.reservations.on_nodes(["n1", "n2"])
    assert (shown["n1"].gpus_now, shown["n1"].names_now, shown["n1"].maintenance) == (
        2,
        ("lab",),
        False,
    )
    assert shown["n1"].next_start == 0.0
    n2 = shown["n2"]
    assert n2.maintenance and n2.gpus_now == 2 and n2.names_now == ("fix",)
    assert (n2.gpus_next, n2.names_next, n2.next_start) == (2, ("exp",), h.clock.now + 3 * HOUR)
    assert h.s.reservations.on_nodes(["n3"]) == {}
