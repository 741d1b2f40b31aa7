"""Stored users and the audit log (tables ``users`` and ``audit``; SQLAlchemy ORM, one
transaction per method)."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from rota.scheduler.cluster.users import AuditEntry, UserRecord
from rota.scheduler.store.models import AuditRow, UserRow


def _user(row: UserRow) -> UserRecord:
    return UserRecord(
        name=row.name,
        admin=row.admin,
        accounts=tuple(row.accounts or ()),
        default_account=row.default_account,
        uid=row.uid,
        gid=row.gid,
        token_hash=row.token_hash,
        revoked=row.revoked,
        created=row.created,
    )


class SqlUserRepository:
    """``UserRepository`` over a session factory."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def users(self) -> list[UserRecord]:
        with self._sessions() as session:
            return [_user(r) for r in session.scalars(select(UserRow).order_by(UserRow.name))]

    def user(self, name: str) -> UserRecord | None:
        with self._sessions() as session:
            row = session.get(UserRow, name)
            return _user(row) if row is not None else None

    def by_token_hash(self, token_hash: str) -> UserRecord | None:
        """The user whose current token hashes to ``token_hash`` (revoked or not)."""
        if not token_hash:
            return None
        with self._sessions() as session:
            row = session.scalars(select(UserRow).where(UserRow.token_hash == token_hash)).first()
            return _user(row) if row is not None else None

    def save(self, user: UserRecord) -> None:
        """Insert or replace ``user``."""
        with self._sessions.begin() as session:
            row = session.get(UserRow, user.name) or UserRow(name=user.name)
            row.admin = user.admin
            row.accounts = list(user.accounts)
            row.default_account = user.default_account
            row.uid, row.gid = user.uid, user.gid
            row.token_hash = user.token_hash
            row.revoked = user.revoked
            row.created = user.created
            session.add(row)

    def record(self, entry: AuditEntry) -> None:
        with self._sessions.begin() as session:
            session.add(
                AuditRow(
                    time=entry.time,
                    user=entry.user,
                    action=entry.action,
                    target=entry.target,
                    peer=entry.peer,
                    allowed=entry.allowed,
                    detail=entry.detail,
                )
            )

    def prune_audit(self, before: float) -> int:
        """Delete entries dated before ``before``; returns how many."""
        with self._sessions.begin() as session:
            result = session.execute(delete(AuditRow).where(AuditRow.time < before))
            return int(getattr(result, "rowcount", 0) or 0)

    def audit(self, since: float = 0.0, limit: int = 1000) -> list[AuditEntry]:
        """Entries at or after ``since``, oldest first; the newest ``limit`` of them."""
        with self._sessions() as session:
            rows = session.scalars(
                select(AuditRow)
                .where(AuditRow.time >= since)
                .order_by(AuditRow.id.desc())
                .limit(limit)
            ).all()
        return [
            AuditEntry(r.time, r.user, r.action, r.target, r.peer, r.allowed, r.detail)
            for r in reversed(rows)
        ]
