"""Dashboard sessions: a login with a rota token gets a random session id (the cookie) and a
CSRF token (sent back in a header with every change).

Sessions are stored in the database (``WebSessionRepository``), so a restarted scheduler, even
one killed with ``kill -9``, keeps everyone logged in. Only hashes are stored: the SHA-256 of
the session id, and the hash of the rota token the login used; the CSRF token is derived from
the session id (an HMAC), so it is never stored either. The token's hash is checked again on
every request, so revoking or replacing a user's token ends their sessions at once.

A session ends at logout, after ``idle`` seconds without a request, or ``lifetime`` seconds
after its login. One user holds at most ``per_user`` sessions (a new login ends that user's
oldest); logins beyond ``total`` in all are refused, never made room for by ending other
users' sessions. Sessions found are kept in memory (event loop only); the store is called on
worker threads, when a session is opened, ended, first seen by this process, or used again
``TOUCH_EVERY`` seconds after the use last stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from rota.scheduler.store.protocols import SessionLimits, StoredSession, WebSessionRepository

COOKIE = "rota_session"
CSRF_HEADER = "x-csrf-token"
IDLE = 8 * 3600.0
LIFETIME = 7 * 24 * 3600.0
MAX_SESSIONS = 10_000  # sessions of all users together; more logins are refused
MAX_PER_USER = 64  # one user's sessions; a login beyond ends that user's oldest
TOUCH_EVERY = 60.0  # seconds: how stale the stored "last used" time may be
MAX_KNOWN = 2 * MAX_SESSIONS  # sessions kept in memory; the least recently found go first


class TooManySessions(Exception):
    """Every session is taken (``total``) by users other than the one logging in."""


@dataclass(slots=True)
class Session:
    """A live session: the hash of its login's token, its CSRF token, its times and user."""

    token_hash: str
    csrf: str
    created: float
    seen: float
    user: str = ""
    stored_seen: float = 0.0  # the "last used" time the store holds


def id_hash(session_id: str) -> str:
    """What the store keeps of a session id."""
    return hashlib.sha256(session_id.encode()).hexdigest()


def csrf_of(session_id: str) -> str:
    """The session's CSRF token: a keyed hash of its id (not derivable from ``id_hash``)."""
    return hmac.new(session_id.encode(), b"rota dashboard csrf", hashlib.sha256).hexdigest()


class Sessions:
    """Session id -> the login's token hash and CSRF token, stored in ``store``."""

    def __init__(
        self,
        store: WebSessionRepository,
        clock: Callable[[], float],
        idle: float = IDLE,
        lifetime: float = LIFETIME,
        per_user: int = MAX_PER_USER,
        total: int = MAX_SESSIONS,
    ) -> None:
        self.store = store
        self.clock = clock
        self.idle = idle
        self.lifetime = lifetime
        self.per_user = per_user
        self.total = total
        self._known: dict[str, Session] = {}  # id hash -> session, least recently found first

    async def open(self, token_hash: str, user: str) -> tuple[str, Session]:
        """A new session of ``user`` for a token (its hash) that was just accepted: (session
        id, session). Ends the user's oldest session when they hold ``per_user``; raises
        TooManySessions when ``total`` are open and none is theirs."""
        now = self.clock()
        session_id = secrets.token_urlsafe(32)
        key = id_hash(session_id)
        stored = StoredSession(key, user, token_hash, now, now)
        ended = await asyncio.to_thread(self.store.open, stored, self._limits(now))
        if ended is None:
            raise TooManySessions(f"{self.total} dashboard sessions are open; try again later")
        for gone in ended:
            self._known.pop(gone, None)
        session = Session(token_hash, csrf_of(session_id), now, now, user, now)
        self._keep(key, session)
        return session_id, session

    async def get(self, session_id: str) -> Session | None:
        """The live session of ``session_id`` (its idle clock restarts), else None."""
        if not session_id:
            return None
        key = id_hash(session_id)
        session = self._known.pop(key, None)
        if session is None:
            stored = await asyncio.to_thread(self.store.find, key)
            if stored is None:
                return None
            session = Session(
                stored.token_hash,
                csrf_of(session_id),
                stored.created,
                stored.seen,
                stored.user,
                stored.seen,
            )
        now = self.clock()
        if now - session.seen > self.idle or now - session.created > self.lifetime:
            await asyncio.to_thread(self.store.close, key)
            return None
        session.seen = now
        self._keep(key, session)
        if now - session.stored_seen >= TOUCH_EVERY:
            session.stored_seen = now
            await asyncio.to_thread(self.store.touch, key, now)
        return session

    async def close(self, session_id: str) -> None:
        if not session_id:
            return
        key = id_hash(session_id)
        self._known.pop(key, None)
        await asyncio.to_thread(self.store.close, key)

    @staticmethod
    def csrf_ok(session: Session, sent: str) -> bool:
        return bool(sent) and hmac.compare_digest(session.csrf, sent)

    def _keep(self, key: str, session: Session) -> None:
        self._known[key] = session
        while len(self._known) > MAX_KNOWN:
            del self._known[next(iter(self._known))]

    def _limits(self, now: float) -> SessionLimits:
        return SessionLimits(now - self.idle, now - self.lifetime, self.per_user, self.total)
