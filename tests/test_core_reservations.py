"""The reservation service in-process: validation, GPU choice, conflicts, restart, launches
clipped to the window, deleted reservations."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.messages import LaunchOrder
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.errors import AlreadyExists, Conflict, UserError
from rota.scheduler.core.reservations import ReservationRequest
from rota.scheduler.policy import reasons
from rota.states import JobState
from tests.support.core import Harness

HOUR = 3600.0
ROOT = Principal("root", admin=True)


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    harness = Harness(tmp_path)
    harness.connect("n1", gpus=4)
    harness.connect("n2", gpus=2)
    return harness


def book(h: Harness, name: str = "lab", start: float = 0.0, hours: float = 2.0, **kw: object):
    at = h.clock.now + start
    fields = {"users": ("ann",), **kw}
    request = ReservationRequest(name, at, at + hours * HOUR, **fields)  # type: ignore[arg-type]
    return h.s.reservations.create(request, ROOT)


def test_nodes_book_every_gpu_and_gpus_pick_the_fewest_nodes(h: Harness) -> None:
    assert book(h, "a", nodes=("n2",)).gpus == {"n2": (0, 1)}
    assert book(h, "b", gpus=3).gpus == {"n1": (0, 1, 2)}
    spread = book(h, "c", gpus=2, gpus_per_node=1, start=3 * HOUR)
    assert spread.gpus == {"n1": (0,), "n2": (0,)}
    with pytest.raises(Conflict, match="gpus: only 1 GPU"):
        book(h, "d", gpus=2)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"nodes": ("n1",), "hours": 0}, "end: must be after start"),
        ({"nodes": ("n1",), "users": ()}, "users/accounts"),
        ({"nodes": ("n9",)}, "nodes: unknown node 'n9'"),
        ({}, "give --nodes LIST, --gpus N or both"),
        ({"nodes": ("n1",), "flags": ("SOMETIMES",)}, "flags: unknown flag"),
        ({"nodes": ("n1",), "flags": ("DAILY", "WEEKLY")}, "at most one of DAILY and WEEKLY"),
        ({"nodes": ("n1",), "flags": ("DAILY",), "hours": 25}, "recurring window may last"),
        ({"gpus": 3, "gpus_per_node": 2}, "gpus_per_node"),
    ],
)
def test_invalid_requests_name_the_field_and_change_nothing(
    h: Harness, fields: dict[str, object], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        book(h, **fields)  # type: ignore[arg-type]
    assert h.s.reservations.all() == []


def test_overlaps_are_refused_by_name_but_maint_may_overlap(h: Harness) -> None:
    book(h, "lab", nodes=("n1",))
    with pytest.raises(Conflict, match="reserved by lab"):
        book(h, "late", nodes=("n1",), start=HOUR)
    with pytest.raises(AlreadyExists, match="name: a reservation named 'lab'"):
        book(h, "lab", nodes=("n2",))
    book(h, "after", nodes=("n1",), start=2 * HOUR)  # back to back is fine
    book(h, "fix", nodes=("n1",), users=("root",), flags=("MAINT",))


def test_gpus_held_by_running_jobs_into_the_window_are_refused_unless_ignore_jobs(
    h: Harness,
) -> None:
    job = h.submit(gpus=2, time_limit=3 * HOUR)
    h.schedule()
    with pytest.raises(Conflict, match=f"running jobs {job} hold"):
        book(h, "lab", nodes=("n1", "n2"), start=HOUR)
    book(h, "lab", nodes=("n1", "n2"), start=HOUR, flags=("IGNORE_JOBS",))
    book(h, "later", nodes=("n1", "n2"), start=4 * HOUR)  # the job ends before


def test_a_restart_in_the_middle_of_a_window_keeps_it(h: Harness) -> None:
    book(h, "lab", nodes=("n1",))
    h.clock.now += HOUR
    h.restart()
    h.connect("n1", gpus=4)
    h.connect("n2", gpus=2)
    assert [r.name for r in h.s.reservations.all()] == ["lab"]
    assert h.s.reservations.reserved_now() == {"n1": 4}
    other = h.submit(gpus=3)
    h.schedule()
    assert h.s.jobs.get(other)[0].reason == reasons.REQ_NODE_NOT_AVAIL


def test_a_reservations_job_is_launched_with_the_window_as_its_time_limit(h: Harness) -> None:
    book(h, "lab", nodes=("n1",), hours=1)
    h.clock.now += 15 * 60
    job = h.submit(gpus=1, time_limit=10 * HOUR, reservation="lab")
    orders = h.schedule()
    (launch,) = [o for _, o in orders if isinstance(o, LaunchOrder)]
    assert launch.time_limit == pytest.approx(45 * 60)
    assert h.state(job) is JobState.CONFIGURING
    with pytest.raises(Conflict, match=f"running jobs \\({job}\\)"):
        h.s.reservations.delete("lab", ROOT)


def test_pending_jobs_of_a_deleted_reservation_are_held(h: Harness) -> None:
    book(h, "lab", nodes=("n1",), start=HOUR)
    job = h.submit(gpus=1, reservation="lab")
    h.schedule()
    assert h.s.jobs.get(job)[0].reason == reasons.RESERVATION
    h.s.reservations.delete("lab", ROOT)
    h.schedule()
    record = h.s.jobs.get(job)[0]
    assert record.reason == reasons.RESERVATION_DELETED and record.held
    h.restart()
    assert h.s.jobs.get(job)[0].held, "the hold is stored"
    h.connect("n1", gpus=4)
    book(h, "lab", nodes=("n1",))
    h.s.control.control("release", [job], "ann")
    h.schedule()
    assert h.state(job) is JobState.CONFIGURING, "released into the new reservation"


def test_pending_jobs_of_a_reservation_that_ended_while_down_are_held(h: Harness) -> None:
    book(h, "lab", nodes=("n2",), hours=1)
    h.submit(gpus=2, reservation="lab")
    h.schedule()
    late = h.submit(gpus=2, reservation="lab")  # waits: the first holds the GPUs
    h.schedule()
    assert h.s.jobs.get(late)[0].reason == reasons.RESOURCES
    h.clock.now += 2 * HOUR
    h.restart()
    h.tick()  # the first tick after the restart writes what time did
    record = h.s.jobs.get(late)[0]
    assert record.held and record.state is JobState.PENDING
    h.schedule()
    assert h.s.jobs.get(late)[0].reason == reasons.RESERVATION_DELETED


def test_submitting_to_a_reservation_checks_name_and_who(h: Harness) -> None:
    book(h, "lab", nodes=("n1",), users=("bob",))
    with pytest.raises(UserError, match="reservation: reservation 'lab' allows users bob"):
        h.submit(gpus=1, reservation="lab")
    with pytest.raises(UserError, match="reservation: unknown reservation 'nope'"):
        h.submit(gpus=1, reservation="nope")


def test_a_borrower_on_idle_reserved_gpus_is_preempted_when_the_owner_submits(h: Harness) -> None:
    book(h, "lab", nodes=("n2",))
    h.submit(gpus=4)  # fills n1
    borrower = h.submit(gpus=2, preemptible=True)
    h.schedule()
    assert h.s.jobs.get(borrower)[0].allocation[0].node == "n2"
    h.event("n2", borrower, "STARTED")
    owner = h.submit(gpus=2, reservation="lab")
    orders = h.schedule()
    assert [(node, type(o).__name__, o.job_id) for node, o in orders] == [
        ("n2", "KillOrder", int(borrower))
    ]
    h.event("n2", borrower, "KILLED", exit_code=143)
    assert h.state(borrower) is JobState.PENDING  # requeued
    orders = h.schedule()
    assert [(node, o.job_id) for node, o in orders if isinstance(o, LaunchOrder)] == [
        ("n2", int(owner))
    ]


def test_no_lending_when_the_reservation_says_no(h: Harness) -> None:
    book(h, "lab", nodes=("n2",), lend=False)
    h.submit(gpus=4)
    borrower = h.submit(gpus=2, preemptible=True)
    h.schedule()
    assert h.s.jobs.get(borrower)[0].reason == reasons.REQ_NODE_NOT_AVAIL
