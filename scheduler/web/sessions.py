"""Dashboard sessions: a login with a rota token gets a random session id (the cookie) and a
CSRF token (sent back in a header with every change).

The token stays in the scheduler's memory, keyed by the session id, and is checked again on
every request, so revoking a user ends their sessions at once. Sessions live in memory only: a
restarted scheduler asks everyone to log in again. A session ends at logout, after ``idle``
seconds without a request, or ``lifetime`` seconds after its login. One user holds at most
``MAX_PER_USER`` sessions (a new login ends that user's oldest); logins beyond ``MAX_SESSIONS``
in all are refused, never made room for by ending other users' sessions.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

COOKIE = "rota_session"
CSRF_HEADER = "x-csrf-token"
IDLE = 8 * 3600.0
LIFETIME = 7 * 24 * 3600.0
MAX_SESSIONS = 10_000  # sessions of all users together; more logins are refused
MAX_PER_USER = 64  # one user's sessions; a login beyond ends that user's oldest


class TooManySessions(Exception):
    """Every session is taken (``MAX_SESSIONS``) by users other than the one logging in."""


@dataclass(slots=True)
class Session:
    token: str
    csrf: str
    created: float
    seen: float
    user: str = ""


class Sessions:
    """Session id -> the login's token and CSRF token (event loop only)."""

    def __init__(
        self, clock: Callable[[], float], idle: float = IDLE, lifetime: float = LIFETIME
    ) -> None:
        self.clock = clock
        self.idle = idle
        self.lifetime = lifetime
        self._by_id: dict[str, Session] = {}
        self._of_user: dict[str, dict[str, None]] = {}  # user -> their session ids, oldest first

    def open(self, token: str, user: str) -> tuple[str, Session]:
        """A new session of ``user`` for a token that was just accepted: (session id,
        session). Ends the user's oldest session when they hold ``MAX_PER_USER``; raises
        TooManySessions when ``MAX_SESSIONS`` are open and none is theirs."""
        now = self.clock()
        self._expire(now)
        mine = self._of_user.get(user, {})
        while len(mine) >= MAX_PER_USER or (mine and len(self._by_id) >= MAX_SESSIONS):
            self.close(next(iter(mine)))
        if len(self._by_id) >= MAX_SESSIONS:
            raise TooManySessions(f"{MAX_SESSIONS} dashboard sessions are open; try again later")
        session_id = secrets.token_urlsafe(32)
        session = Session(token, secrets.token_urlsafe(32), now, now, user)
        self._by_id[session_id] = session
        self._of_user.setdefault(user, {})[session_id] = None
        return session_id, session

    def __len__(self) -> int:
        """Sessions open now (expired ones may still count until the next look)."""
        return len(self._by_id)

    def get(self, session_id: str) -> Session | None:
        """The live session of ``session_id`` (its idle clock restarts), else None."""
        session = self._by_id.get(session_id) if session_id else None
        if session is None:
            return None
        now = self.clock()
        if now - session.seen > self.idle or now - session.created > self.lifetime:
            self.close(session_id)
            return None
        session.seen = now
        return session

    def close(self, session_id: str) -> None:
        session = self._by_id.pop(session_id, None)
        if session is None:
            return
        mine = self._of_user.get(session.user, {})
        mine.pop(session_id, None)
        if not mine:
            self._of_user.pop(session.user, None)

    @staticmethod
    def csrf_ok(session: Session, sent: str) -> bool:
        return bool(sent) and hmac.compare_digest(session.csrf, sent)

    def _expire(self, now: float) -> None:
        dead = [
            k
            for k, s in self._by_id.items()
            if now - s.seen > self.idle or now - s.created > self.lifetime
        ]
        for key in dead:
            self.close(key)
