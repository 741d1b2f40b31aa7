"""Who may open a job's web port on the ports origin (``web_ports_listen``): tickets the
dashboard hands out and the grants they are exchanged for.

A ticket is 192 random bits, bound to one caller (their user name and the hash of the rota
token they used), one job, one way (``port`` or ``app``) and one port; it is good once, for
``TICKET_SECONDS``. Redeemed on the ports origin it becomes a grant, whose random id is that
origin's cookie for the job's prefix only; a grant ends ``GRANT_IDLE`` seconds after its last
use, ``GRANT_LIFETIME`` seconds after it was made, or at the logout of the dashboard session
it was asked with. Only SHA-256 hashes of tickets and grant
ids are kept, in memory (event loop only): a restarted scheduler forgets them, and the port
is opened again from the dashboard. One user holds at most ``MAX_USER_TICKETS`` tickets and
``MAX_USER_GRANTS`` grants (their oldest go first): one user asking for thousands does not
push out everyone else's. ``port`` is the ports origin's bound port (0: not served).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass

TICKET_SECONDS = 30.0
GRANT_IDLE = 8 * 3600.0
GRANT_LIFETIME = 24 * 3600.0
MAX_TICKETS = 10_000  # outstanding tickets; the oldest go first
MAX_GRANTS = 10_000  # live grants; the least recently used go first
MAX_USER_TICKETS = 64  # one user's outstanding tickets; their oldest go first
MAX_USER_GRANTS = 256  # one user's live grants; their least recently used go first


@dataclass(frozen=True, slots=True)
class Door:
    """What a ticket or grant opens: one job's port, one way."""

    job_id: str
    way: str
    port: int

    @property
    def prefix(self) -> str:
        return f"/jobs/{self.job_id}/{self.way}/{self.port}/"


@dataclass(slots=True)
class Pass:
    """A ticket or grant: whose (user, token hash, and the id hash of the dashboard session
    it was asked with, "" for a bearer token), for what, since and until when."""

    user: str
    token_hash: str
    door: Door
    made: float
    used: float
    session: str = ""


def _key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class PortGrants:
    """Tickets and grants; ``clock`` gives the time in seconds."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.port = 0
        self._tickets = _Passes(MAX_TICKETS, MAX_USER_TICKETS)  # oldest first
        self._grants = _Passes(MAX_GRANTS, MAX_USER_GRANTS)  # least recently used first

    def ticket(self, user: str, token_hash: str, door: Door, session: str = "") -> str:
        """A new single-use ticket of ``user`` for ``door``, asked with the dashboard session
        whose id hashes to ``session`` ("" for a bearer token)."""
        now = self.clock()
        while (oldest := self._tickets.oldest()) and now - oldest[1].made > TICKET_SECONDS:
            self._tickets.drop(oldest[0])
        secret = secrets.token_urlsafe(24)
        self._tickets.add(_key(secret), Pass(user, token_hash, door, now, now, session))
        return secret

    def redeem(self, ticket: str, door: Door) -> tuple[str, Pass] | None:
        """A new grant (its id, and itself) for a ticket of ``door`` that is current; the
        ticket is spent whatever the answer. None for an unknown, used, expired or other
        door's ticket."""
        found = self._tickets.drop(_key(ticket))
        now = self.clock()
        if found is None or found.door != door or now - found.made > TICKET_SECONDS:
            return None
        grant_id = secrets.token_urlsafe(32)
        grant = Pass(found.user, found.token_hash, door, now, now, found.session)
        self._grants.add(_key(grant_id), grant)
        return grant_id, grant

    def grant(self, grant_ids: list[str], door: Door) -> Pass | None:
        """The live grant among ``grant_ids`` (a request's cookies) that opens ``door``; its
        idle clock restarts."""
        now = self.clock()
        for grant_id in grant_ids:
            key = _key(grant_id)
            found = self._grants.drop(key)
            if found is None:
                continue
            if now - found.used > GRANT_IDLE or now - found.made > GRANT_LIFETIME:
                continue
            self._grants.add(key, found)
            if found.door == door:
                found.used = now
                return found
        return None

    def end_session(self, session: str) -> None:
        """End the tickets and grants asked with the dashboard session whose id hashes to
        ``session`` (its logout: the browser keeps no job's port open after it)."""
        for passes in (self._tickets, self._grants):
            passes.drop_where(lambda found: found.session == session)


class _Passes:
    """Passes by the hash of their secret, in the order they were added (oldest first), at
    most ``most`` in all and ``per_user`` of one user: one more ends the oldest of all, or of
    that user (so one user's many do not push out the others')."""

    def __init__(self, most: int, per_user: int) -> None:
        self.most = most
        self.per_user = per_user
        self._all: dict[str, Pass] = {}
        self._of: dict[str, dict[str, None]] = {}  # user -> keys of their passes, oldest first

    def add(self, key: str, found: Pass) -> None:
        self._all[key] = found
        mine = self._of.setdefault(found.user, {})
        mine[key] = None
        if len(mine) > self.per_user:
            self.drop(next(iter(mine)))
        while len(self._all) > self.most:
            self.drop(next(iter(self._all)))

    def drop(self, key: str) -> Pass | None:
        found = self._all.pop(key, None)
        if found is not None:
            mine = self._of[found.user]
            del mine[key]
            if not mine:
                del self._of[found.user]
        return found

    def drop_where(self, ended: Callable[[Pass], bool]) -> None:
        for key in [key for key, found in self._all.items() if ended(found)]:
            self.drop(key)

    def oldest(self) -> tuple[str, Pass] | None:
        """The first pass added (its key, and itself); None when there is none."""
        return next(iter(self._all.items()), None)
