"""Forward data connections' tickets: random, single-use, expiring, revocable."""

from __future__ import annotations

import asyncio

from rota.scheduler.dial_tickets import DialTickets


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
