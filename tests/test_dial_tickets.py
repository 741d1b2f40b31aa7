"""Forward data connections' tickets: random, single-use, expiring, revocable; and the
per-user slots a raw forward holds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rota.scheduler.dial_tickets import DialTickets
from rota.scheduler.http import HttpServer
from rota.scheduler.web.api import ApiError
from rota.scheduler.web.dashboard import dashboard_routes
from rota.scheduler.web.identity import EngineTokens
from rota.scheduler.web.slots import UserSlots
from tests.support.inprocess import InProcessScheduler
from tests.test_security_input import DaemonChain, run


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_ticket_is_claimed_once_within_its_time_and_never_after() -> None:
    async def run() -> None:
        clock = Clock()
        tickets = DialTickets(clock, ttl=10.0)
        ticket, pending = tickets.issue("n1", 7)
        assert len(ticket) >= 22  # at least 128 random bits in base64
        other, _ = tickets.issue("n1", 7)
        assert other != ticket
        assert tickets.claim("forged" + ticket) is None
        assert tickets.claim(ticket) is pending and (pending.node, pending.job_id) == ("n1", 7)
        assert tickets.claim(ticket) is None  # replayed
        clock.now += 10.0
        assert tickets.claim(other) is None  # expired
        late, _ = tickets.issue("n2", 8)
        tickets.revoke(late)  # its forward stopped waiting
        assert tickets.claim(late) is None
        assert len(tickets) == 0
        answered, waiting = tickets.issue("n2", 8)
        waiting.connected.cancel()  # the client's side gave up
        assert tickets.claim(answered) is None

    asyncio.run(run())


def test_the_dial_route_takes_a_ticket_once_and_never_a_stale_one(tmp_path: Path) -> None:
    """The HTTP port's dial route, as an agent's data connection reaches it: the ticket of a
    waiting forward switches the connection once; replayed, stale or forged, 403."""

    async def test(sched: InProcessScheduler) -> None:
        clock = Clock()
        forwards = sched.engine.forwards
        forwards.tickets = DialTickets(clock, ttl=10.0)
        http = HttpServer(dashboard_routes(sched.engine, EngineTokens(sched.engine), False))
        port = await http.start("127.0.0.1:0")
        try:
            ticket, pending = forwards.tickets.issue("n1", 1)
            _, writer = await _send(port, ticket)
            await asyncio.wait_for(pending.connected, 5)  # handed to the forward that waits
            writer.close()
            assert (await _dial(port, ticket)).startswith(b"HTTP/1.1 403 ")  # replayed
            stale, _ = forwards.tickets.issue("n1", 1)
            clock.now += 10.0
            assert (await _dial(port, stale)).startswith(b"HTTP/1.1 403 ")  # expired
            assert (await _dial(port, "A" * 32)).startswith(b"HTTP/1.1 403 ")  # forged
        finally:
            await http.stop()

    run(DaemonChain, tmp_path, test)


async def _send(port: int, ticket: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A data connection presenting ``ticket`` (switched once its forward takes it)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        "GET /api/v1/forward-dial HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
        f"Upgrade: rota-tcp\r\nRota-Dial-Ticket: {ticket}\r\n\r\n".encode()
    )
    return reader, writer


async def _dial(port: int, ticket: str) -> bytes:
    """The head of the answer to a data connection presenting ``ticket``."""
    reader, writer = await _send(port, ticket)
    try:
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    finally:
        writer.close()


def test_a_users_forwards_and_terminals_share_their_slots() -> None:
    """A raw forward takes one of its user's slots for as long as it is open; one beyond them
    is refused (503) before anything opens, and another user is not affected."""
    slots = UserSlots(2)
    slots.take("alice")
    slots.take("alice")
    with pytest.raises(ApiError) as refused:
        slots.check("alice")
    assert refused.value.status == 503 and "alice has 2 terminals, forwards" in str(refused.value)
    slots.take("bob")
    slots.give("alice")
    slots.take("alice")  # the slot given back is free again
