"""Issue 26, item 5: unused bookings given back. The no-show rule is the pure calendar's
(``ReservationCalendar.no_shows``), driven here with a fake clock: a window whose owners ran
nothing for ``unused_after`` (30 min by default) is given back, its owners told (the audit
log), and per its ``unused`` policy its GPUs are lent to the whole queue until an owner's job
arrives, or the window is released; ``greserve show``'s usage counts the released GPU-hours."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from rota.scheduler.cluster.accounting import AccountingQuery
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.reservations import ReservationRequest
from rota.scheduler.policy import reasons
from rota.scheduler.policy.calendar import ReservationCalendar
from rota.scheduler.policy.snapshot import ReservationView
from rota.states import JobState
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.core import Harness
from tests.support.inprocess import InProcessScheduler
from tests.test_web_api import Browserless, iso, registered, run, user

HOUR = 3600.0
MIN = 60.0
ROOT = Principal("root", admin=True)


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    harness = Harness(
        tmp_path, node_timeout=10 * HOUR, node_grace=11 * HOUR
    )  # the fake clock jumps; nodes stay
    harness.connect("n1", gpus=4)
    harness.connect("n2", gpus=2)
    return harness


def book(h: Harness, name: str = "lab", **kw: object):
    at = h.clock.now
    fields = {"users": ("ann",), "nodes": ("n2",), **kw}
    request = ReservationRequest(name, at, at + 2 * HOUR, **fields)  # type: ignore[arg-type]
    return h.s.reservations.create(request, ROOT)


def _view(**kw: object) -> ReservationView:
    fields = {"name": "lab", "start": 1000.0, "end": 1000.0 + 2 * HOUR, "gpus": {"n2": (0, 1)}}
    return ReservationView(**(fields | kw))  # type: ignore[arg-type]


def test_the_calendar_names_windows_unused_past_the_grace() -> None:
    lab = _view()
    at = lambda now: ReservationCalendar([lab], now)  # noqa: E731
    assert at(1000.0 + 29 * MIN).no_shows(30 * MIN, ()) == ()
    assert at(1000.0 + 30 * MIN).no_shows(30 * MIN, ()) == (lab,)
    assert at(1000.0 + 30 * MIN).no_shows(30 * MIN, ("lab",)) == ()  # its owners used it
    assert at(1000.0 + 30 * MIN).no_shows(0.0, ()) == ()  # the rule turned off
    late = ReservationCalendar([_view(created_at=1000.0 + 20 * MIN)], 1000.0 + 40 * MIN)
    assert late.no_shows(30 * MIN, ()) == ()  # booked 20 min into its window: 30 min from then
    maint = ReservationCalendar([_view(maint=True)], 1000.0 + HOUR)
    assert maint.no_shows(30 * MIN, ()) == ()
    lent = _view(given_back=1000.0 + 30 * MIN)
    assert lent.lent_to_all and ReservationCalendar([lent], 1000.0 + HOUR).no_shows(60.0, ()) == ()
    released = dataclasses.replace(lent, unused="release")
    assert ReservationCalendar([released], 1000.0 + HOUR).reservations == ()
    daily = dataclasses.replace(released, period=24 * HOUR)
    (moved,) = ReservationCalendar([daily], 1000.0 + HOUR).reservations
    assert (moved.start, moved.released) == (1000.0 + 24 * HOUR, False)  # tomorrow's stays


def test_an_unused_window_is_lent_to_the_queue_until_an_owner_job_arrives(h: Harness) -> None:
    book(h, lend=False)  # not even preemptible jobs may borrow while the owners may come
    h.submit(gpus=4)  # fills n1
    short = h.submit(gpus=2, time_limit=HOUR)  # ends within the window
    long = h.submit(gpus=2, time_limit=5 * HOUR)  # would outlast it
    h.schedule()
    assert h.s.jobs.get(short)[0].reason == reasons.REQ_NODE_NOT_AVAIL
    h.clock.now += 29 * MIN
    h.tick()
    h.schedule()
    assert h.state(short) is JobState.PENDING  # within the grace: still kept for the owners
    h.clock.now += 2 * MIN
    h.tick()
    assert h.s.reservations.get("lab").given_back == h.clock.now
    (told,) = [e for e in h.s.users.audit() if e.action == "reservation unused"]
    assert told.target == "name=lab" and "no job of ann used it for 31 min" in told.detail
    assert "lent to the queue until an owner's job arrives" in told.detail
    h.schedule()
    assert h.state(short) is JobState.CONFIGURING
    assert h.s.jobs.get(short)[0].allocation[0].node == "n2"
    assert h.state(long) is JobState.PENDING
    h.event("n2", short, "STARTED")
    h.event("n2", short, "EXITED", exit_code=0)
    owner = h.submit(gpus=2, reservation="lab")  # an owner's job arrives: the loan ends
    other = h.submit(gpus=2, time_limit=10 * MIN)
    h.schedule()
    assert h.state(owner) is JobState.CONFIGURING and h.state(other) is JobState.PENDING
    usage = h.s.reservations.usage("lab")
    assert usage.lent == pytest.approx(0.0)  # started and ended at one fake instant
    assert usage.released == 0.0


def test_an_unused_window_with_release_is_released_and_counted(h: Harness) -> None:
    book(h, unused="release")
    used = book(h, "used", nodes=("n1",))
    h.clock.now += 10 * MIN
    job = h.submit(gpus=1, reservation="used")
    h.schedule()
    h.event("n1", job, "STARTED")
    h.clock.now += 25 * MIN
    h.tick()
    assert h.s.reservations.get("used").given_back == 0.0  # its owner's job runs
    assert h.state(job) is JobState.RUNNING
    lab = h.s.reservations.get("lab")
    assert lab.given_back == h.clock.now
    assert h.s.reservations.reserved_now() == {"n1": 4}  # n2 is free again
    usage = h.s.reservations.usage("lab")
    assert usage.booked == pytest.approx(2 * 35 * MIN)  # up to the release
    assert usage.released == pytest.approx(2 * (2 * HOUR - 35 * MIN))
    anyone = h.submit(gpus=2, time_limit=5 * HOUR)
    h.schedule()
    assert h.s.jobs.get(anyone)[0].allocation[0].node == "n2"
    h.clock.now += 5 * MIN
    h.tick()  # told once, not at every tick
    assert len([e for e in h.s.users.audit() if e.action == "reservation unused"]) == 1
    assert used.unused == "lend"  # the default
    h.clock.now += 2 * HOUR  # both windows end: how they were spent is kept for gacct
    h.tick()
    (root,) = [t for t in h.s.accounting.summary(AccountingQuery())[0] if t.name == "root"]
    # lab: 2 GPUs x 2 h, none used; used: 4 GPUs x 2 h, 1 GPU used by its job from 10 min on
    assert root.booked_unused == pytest.approx(2 * 2 + 4 * 2 - 110 / 60)


def test_the_policy_is_set_and_shown_by_the_web_api_and_grpc(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 4)
        web = client()
        csrf = {"X-CSRF-Token": (await web.login(await user(sched, "ann")))["csrf"]}
        now = time.time()
        window = {"start": iso(now - 60), "end": iso(now + 3 * 3600), "gpus": {"n1": [0, 1]}}
        bad = await web.call(
            "POST", "/api/v1/reservations", {"name": "b", "unused": "keep", **window}, csrf
        )
        assert bad.status == 400
        assert bad.json()["error"] == "unused: 'keep' is not one of lend, release"
        made = await web.call(
            "POST", "/api/v1/reservations", {"name": "ann-a", "unused": "release", **window}, csrf
        )
        assert made.status == 201 and made.json()["unused"] == "release", made.body
        shown = (await web.call("GET", "/api/v1/reservations/ann-a")).json()
        assert (shown["unused"], shown["given_back"]) == ("release", None)
        usage = shown["usage"]
        assert set(usage) == {"booked", "used", "lent", "idle", "released"}
        assert usage["booked"] > 0 and usage["used"] == usage["released"] == 0
        stub = pb_grpc.ReservationServiceStub(sched.channel)
        got = await stub.GetReservation(pb.GetReservationRequest(name="ann-a"))
        assert (got.unused, got.given_back, got.released_gpu_seconds) == ("release", 0.0, 0.0)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.CreateReservation(
                pb.CreateReservationRequest(
                    name="x", start=now, end=now + 60, nodes=["n1"], users=["ann"], unused="no"
                )
            )
        assert refused.value.details() == "unused: 'no' is not one of lend, release"

    run(test, tmp_path)


def test_greserve_show_and_gacct_summary_print_the_given_back_hours(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rota.cli import gacct, greserve

    r = pb.Reservation(
        name="lab",
        start=1000.0,
        end=1000.0 + 2 * HOUR,
        gpus=[pb.ReservedGpus(node="n2", indices=[0, 1])],
        users=["ann"],
        unused="release",
        given_back=1000.0 + 30 * MIN,
        booked_gpu_seconds=2 * 30 * MIN,
        released_gpu_seconds=2 * 90 * MIN,
    )
    greserve._show(r)
    out = capsys.readouterr().out
    assert "  unused:   release it (given back at " in out
    assert (
        "1.0 GPU-h booked so far: 0.0 used by its owners, 0.0 lent, 1.0 idle, 3.0 released" in out
    )
    reply = pb.SummaryResponse(
        users=[pb.UsageTotal(name="ann", jobs=0, booked_unused_gpu_hours=4.0)],
        accounts=[pb.UsageTotal(name="ml", jobs=2, gpu_hours=1.5)],
    )
    args = gacct.build_parser().parse_args(["--summary"])
    gacct._print_summary(reply, args)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["KIND", "NAME", "JOBS", "GPU_HOURS", "GPU_UTIL", "BOOKED_UNUSED"]
    assert lines[1].split() == ["user", "ann", "0", "0.00", "-", "4.00"]
    assert lines[2].split() == ["account", "ml", "2", "1.50", "-", "-"]


def test_the_gpus_of_a_released_window_may_be_booked_again(h: Harness) -> None:
    book(h, unused="release")
    h.clock.now += 31 * MIN
    h.tick()
    again = book(h, "again", users=("bob",))
    assert again.gpus == {"n2": (0, 1)}
