"""Who may book, through the real grpc.aio server with tokens: the caller is the token's user,
admins book for anyone, users for themselves and their accounts within the caps; refusals are
PERMISSION_DENIED naming the reason and audited, admin bookings are audited."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import grpc

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler
from tests.test_auth import DENIED, audit, refused, with_node


def run(test: object, root: Path, **config: object) -> None:
    async def main() -> None:
        async with InProcessScheduler(root, **config) as sched:
            await asyncio.wait_for(test(sched), 60)  # type: ignore[operator]

    asyncio.run(main())


def booking(
    name: str, hours: float = 1.0, after: float = 1.0, **fields: object
) -> pb.CreateReservationRequest:
    """A booking of node n1 starting ``after`` hours from now."""
    start = time.time() + after * 3600
    base = {"nodes": ["n1"], "users": ["bob"]}
    return pb.CreateReservationRequest(
        name=name, start=start, end=start + hours * 3600, **{**base, **fields}
    )  # type: ignore[arg-type]


def test_who_may_book_follows_the_token_and_refusals_are_audited(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        admin = pb_grpc.ReservationServiceStub(sched.channel)
        bob = pb_grpc.ReservationServiceStub(sched.user_channel("bob", accounts=("lab",)))

        code, details = await refused(bob.CreateReservation(booking("x", users=["ann"])))
        assert code is DENIED and "users: bob may book only for themselves, not ann" in details
        code, details = await refused(
            bob.CreateReservation(booking("x", users=[], accounts=["physics"]))
        )
        assert code is DENIED and "accounts: bob may book only for their accounts (lab)" in details
        mine = await bob.CreateReservation(booking("mine", users=[], accounts=["lab"]))
        assert mine.created_by == "bob"

        theirs = await admin.CreateReservation(booking("theirs", users=["ann"], after=3))
        assert theirs.created_by == "admin"
        code, details = await refused(
            bob.DeleteReservation(pb.DeleteReservationRequest(name="theirs"))
        )
        assert code is DENIED and "made by admin; only they and admins" in details
        listed = await bob.ListReservations(pb.ListReservationsRequest())
        assert [r.name for r in listed.reservations] == ["mine", "theirs"]

        await admin.ListReservations(pb.ListReservationsRequest())
        entries = await audit(sched)
        refusals = [(e.user, e.action) for e in entries if not e.allowed]
        assert refusals.count(("bob", "ReservationService/CreateReservation")) == 2
        assert ("bob", "ReservationService/DeleteReservation") in refusals
        assert any("may book only for themselves" in e.detail for e in entries)
        allowed = [(e.user, e.action) for e in entries if e.allowed]
        assert ("bob", "ReservationService/CreateReservation") not in allowed, "no admin power"
        assert ("admin", "ReservationService/ListReservations") not in allowed

    run(test, tmp_path)


def test_a_users_booking_over_a_cap_is_refused_naming_it(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        bob = pb_grpc.ReservationServiceStub(sched.user_channel("bob"))
        with_cap = booking("long", hours=5)
        code, details = await refused(bob.CreateReservation(with_cap))
        assert code is grpc.StatusCode.FAILED_PRECONDITION
        assert "cap max_hours: a booking may last at most 4 h; asked 5 h" in details
        admin = pb_grpc.ReservationServiceStub(sched.channel)
        assert (await admin.CreateReservation(with_cap)).name == "long", "caps bind users only"
        entries = await audit(sched)
        assert ("admin", "ReservationService/CreateReservation", True) in [
            (e.user, e.action, e.allowed) for e in entries
        ]

    run(test, tmp_path, reservations={"max_hours": 4})


def test_maint_and_ignore_jobs_are_for_admins_only(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        bob = pb_grpc.ReservationServiceStub(sched.user_channel("bob"))
        for flag in ("MAINT", "ignore_jobs"):
            code, details = await refused(bob.CreateReservation(booking("x", flags=[flag])))
            assert code is DENIED
            assert f"flags: {flag.upper()} is for admins only; bob is not an admin" in details
        mine = await bob.CreateReservation(booking("mine", flags=["FLEX"]))
        code, details = await refused(
            bob.UpdateReservation(
                pb.UpdateReservationRequest(
                    name="mine",
                    changes=pb.CreateReservationRequest(flags=["MAINT"]),
                    fields=["flags"],
                )
            )
        )
        assert code is DENIED and "MAINT is for admins only" in details
        listed = await bob.ListReservations(pb.ListReservationsRequest())
        assert [(r.name, list(r.flags)) for r in listed.reservations] == [(mine.name, ["FLEX"])]
        admin = pb_grpc.ReservationServiceStub(sched.channel)
        made = await admin.CreateReservation(booking("fw", after=3, flags=["MAINT"]))
        assert list(made.flags) == ["MAINT"]

    run(test, tmp_path)
