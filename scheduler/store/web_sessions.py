"""Stored dashboard sessions (table ``web_sessions``; SQLAlchemy Core, one transaction per
method). Only hashes are stored: the session id's and the rota token's."""

from __future__ import annotations

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement

from rota.scheduler.store.models import WEB_SESSIONS
from rota.scheduler.store.protocols import SessionLimits, StoredSession

_S = WEB_SESSIONS.c


class SqlWebSessionRepository:
    """``WebSessionRepository`` on one SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def open(self, session: StoredSession, limits: SessionLimits) -> list[str] | None:
        """Store ``session`` after forgetting expired sessions (``limits.expired``) and, while
        its user holds ``limits.per_user`` (or every one of ``limits.total`` is taken and some
        are theirs), that user's oldest. Returns the id hashes it ended, or None (nothing of
        the user's ended, nothing stored) when ``limits.total`` sessions of others are open."""
        with self._engine.begin() as conn:
            conn.execute(delete(WEB_SESSIONS).where(_expired(limits)))
            mine = list(
                conn.scalars(select(_S.id_hash).where(_S.user == session.user).order_by(_S.created))
            )
            total = conn.scalar(select(func.count()).select_from(WEB_SESSIONS)) or 0
            ended: list[str] = []
            while mine and (len(mine) >= limits.per_user or total >= limits.total):
                ended.append(mine.pop(0))
                total -= 1
            if total >= limits.total:
                return None
            if ended:
                conn.execute(delete(WEB_SESSIONS).where(_S.id_hash.in_(ended)))
            conn.execute(
                insert(WEB_SESSIONS).values(
                    id_hash=session.id_hash,
                    user=session.user,
                    token_hash=session.token_hash,
                    created=session.created,
                    seen=session.seen,
                )
            )
            return ended

    def find(self, id_hash: str) -> StoredSession | None:
        with self._engine.connect() as conn:
            row = conn.execute(select(WEB_SESSIONS).where(_S.id_hash == id_hash)).first()
        if row is None:
            return None
        return StoredSession(row.id_hash, row.user, row.token_hash, row.created, row.seen)

    def touch(self, id_hash: str, seen: float) -> None:
        """Record that the session was used at ``seen``."""
        with self._engine.begin() as conn:
            conn.execute(update(WEB_SESSIONS).where(_S.id_hash == id_hash).values(seen=seen))

    def close(self, id_hash: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(delete(WEB_SESSIONS).where(_S.id_hash == id_hash))


def _expired(limits: SessionLimits) -> ColumnElement[bool]:
    return or_(_S.seen < limits.seen_after, _S.created < limits.created_after)
