"""Issue 26, item 5: the owners of a reservation the no-show rule gives back are told. With a
mail relay (a real SMTP server on 127.0.0.1 here) every owner, its users and the members of
its accounts, gets one mail naming the reservation, the window and what became of it (lent or
released), queued with the give-back (it survives a restart) and sent by the scheduler's
mailer; without a relay none is queued; a MAINT reservation is never given back, so never
mailed. Driven with a fake clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import func, select

from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.mail import Mail
from rota.scheduler.core.reservations import ReservationRequest
from rota.scheduler.mailer import Mailer, SmtpSender
from rota.scheduler.store.models import BOOKING_MAILS
from rota.v1 import rota_pb2 as pb
from tests.support.core import Harness
from tests.support.smtp import SmtpRelay

HOUR = 3600.0
MIN = 60.0
ROOT = Principal("root", admin=True)


def _harness(path: Path, **config: object) -> Harness:
    h = Harness(
        path, node_timeout=10 * HOUR, node_grace=11 * HOUR, **config
    )  # the fake clock jumps; nodes stay
    h.connect("n1", gpus=4)
    h.connect("n2", gpus=2)
    for name, accounts in (("bob", ("ml",)), ("cat", ("ml", "vision")), ("dan", ("vision",))):
        h.s.users.add(name, accounts=accounts)
    return h


def _book(h: Harness, name: str, **fields: object) -> None:
    at = h.clock.now
    request = ReservationRequest(name, at, at + 2 * HOUR, **fields)  # type: ignore[arg-type]
    h.s.reservations.create(request, ROOT)


def _queued(h: Harness) -> int:
    with h.store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(BOOKING_MAILS)).scalar_one()


def _deliver(h: Harness, relay: SmtpRelay, count: int) -> None:
    """Run the scheduler's mailer against ``relay`` until ``count`` mails arrived."""

    async def claim(limit: int) -> list[Mail]:
        return h.s.mail.claim(limit)

    async def report(mail: Mail, error: str) -> None:
        (h.s.mail.failed if error else h.s.mail.sent)(mail)

    async def main() -> None:
        mailer = Mailer(claim, report, SmtpSender(relay.address, 5.0, 2), 2, 0.02)
        mailer.start()
        try:
            async with asyncio.timeout(20):
                while len(relay.mails()) < count or _queued(h):  # sent, then recorded
                    await asyncio.sleep(0.02)
        finally:
            await mailer.stop()

    asyncio.run(main())


def test_owners_are_mailed_what_became_of_their_unused_booking(tmp_path: Path) -> None:
    with SmtpRelay() as relay:
        h = _harness(tmp_path, mail_relay=relay.address, mail_domain="lab.example")
        _book(h, "lab", users=("ann",), accounts=("ml",), nodes=("n2",), unused="release")
        _book(h, "rack", users=("dan",), nodes=("n1",), gpus=2)  # lent when unused
        _book(h, "fix", users=("root",), nodes=("n1",), flags=("MAINT",), gpus=2)
        h.clock.now += 31 * MIN
        h.tick()
        assert h.s.reservations.get("lab").given_back == h.clock.now
        assert h.s.reservations.get("fix").given_back == 0.0  # MAINT: never given back
        h.restart()  # queued with the give-back: a restart loses none
        _deliver(h, relay, 4)
        got = {(to, m["Subject"]): m for _, (to,), m in relay.mails()}
        assert sorted(got) == [
            ("ann@lab.example", "rota Reservation=lab unused: released"),
            ("bob@lab.example", "rota Reservation=lab unused: released"),
            ("cat@lab.example", "rota Reservation=lab unused: released"),
            ("dan@lab.example", "rota Reservation=rack unused: lent"),
        ]  # ann: a user of lab; bob, cat: members of its account ml; nobody about fix
        assert all(m["From"] == "rota@lab.example" for m in got.values())
        released = got[("bob@lab.example", "rota Reservation=lab unused: released")]
        text = released.get_content()
        assert "Reservation lab (1970-01-12 13:46 UTC to 1970-01-12 15:46 UTC, n2 GPUs 0,1)" in text
        assert "given back at 1970-01-12 14:17 UTC: no job of ann, ml used it for 31 min" in text
        assert "the booking is released" in text and "free for anyone" in text
        lent = got[("dan@lab.example", "rota Reservation=rack unused: lent")].get_content()
        assert "its GPUs are lent to the queue until an owner's job arrives" in lent
        assert "Submit a job with --reservation rack to take its GPUs back." in lent
        h.clock.now += 10 * MIN
        h.tick()  # told once, not at every tick
        assert _queued(h) == 0


def test_without_a_relay_nothing_is_queued_and_the_audit_log_still_tells(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    _book(h, "lab", users=("ann",), accounts=("ml",), nodes=("n2",))
    h.clock.now += 31 * MIN
    h.tick()
    assert h.s.reservations.get("lab").given_back == h.clock.now
    assert h.store.booking_mails.claim(h.clock.now + HOUR, 60.0, 10) == []
    assert [e.target for e in h.s.users.audit() if e.action == "reservation unused"] == ["name=lab"]


def test_greserve_show_tells_an_owner_when_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    from rota.cli import greserve

    r = pb.Reservation(
        name="lab",
        start=1000.0,
        end=1000.0 + 2 * HOUR,
        gpus=[pb.ReservedGpus(node="n2", indices=[0, 1])],
        users=["ann"],
        unused="lend",
        given_back=1000.0 + 31 * MIN,
    )
    greserve._show(r)
    out = capsys.readouterr().out
    assert "  unused:   lend its GPUs to the queue (given back at " in out
    assert ": no job of its owners in 31 min)" in out


def test_a_mail_the_relay_refuses_is_retried_then_given_up(tmp_path: Path) -> None:
    with SmtpRelay() as relay:
        down = relay.address  # nothing listens there once the relay has stopped
    h = _harness(tmp_path, mail_relay=down, notify_tries=2, notify_backoff=60.0)
    _book(h, "lab", users=("ann",), nodes=("n2",))
    h.clock.now += 31 * MIN
    h.tick()
    sender = SmtpSender(down, 5.0, 1)
    (mail,) = h.s.mail.claim(10)
    assert asyncio.run(sender.send(mail))  # refused: why
    h.s.mail.failed(mail)
    assert h.s.mail.claim(10) == []  # not due again before the backoff
    h.clock.now += 61.0
    (again,) = h.s.mail.claim(10)
    assert (again.to, again.tries, again.about) == ("ann", 1, "reservation lab")
    h.s.mail.failed(again)  # the second of notify_tries: given up
    sender.close()
    assert _queued(h) == 0
