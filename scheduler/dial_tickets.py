"""Single-use tickets for forwards' data connections (event loop only).

The scheduler gives a node's agent a ticket with the order to open a forward; the agent
presents it when it dials the data connection back to the HTTP port, which is then paired with
the client's connection of that forward and no other. A ticket is 192 random bits, names one
request (its node and job), is claimed once and expires after ``TTL`` seconds; it is kept only
as its SHA-256 digest.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TTL = 10.0  # seconds a ticket may be claimed in


@dataclass(frozen=True, slots=True)
class Pending:
    """A ticket's request: the agent's data connection is handed to ``connected``."""

    node: str
    job_id: int
    expires: float
    connected: asyncio.Future[Any]


class DialTickets:
    """Tickets issued and not yet claimed, revoked or expired."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, ttl: float = TTL) -> None:
        self.clock = clock
        self.ttl = ttl
        self._pending: dict[bytes, Pending] = {}

    def issue(self, node: str, job_id: int) -> tuple[str, Pending]:
        """A new ticket for a forward of job ``job_id`` on ``node``, and its request."""
        self._expire()
        ticket = secrets.token_urlsafe(24)
        pending = Pending(
            node, job_id, self.clock() + self.ttl, asyncio.get_running_loop().create_future()
        )
        self._pending[_digest(ticket)] = pending
        return ticket, pending

    def claim(self, ticket: str) -> Pending | None:
        """The request of ``ticket``, once; None for a ticket never issued, already claimed,
        revoked or expired."""
        self._expire()
        pending = self._pending.pop(_digest(ticket), None)
        if pending is None or pending.connected.done():
            return None
        return pending

    def revoke(self, ticket: str) -> None:
        """Nobody waits for the ticket's connection any more."""
        self._pending.pop(_digest(ticket), None)

    def __len__(self) -> int:
        return len(self._pending)

    def _expire(self) -> None:
        now = self.clock()
        for key in [k for k, p in self._pending.items() if p.expires <= now]:
            del self._pending[key]


def _digest(ticket: str) -> bytes:
    return hashlib.sha256(ticket.encode("utf-8", "replace")).digest()
