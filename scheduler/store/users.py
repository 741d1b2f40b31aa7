"""Users and the audit log in the scheduler's database (tables ``users`` and ``audit``).

``UserStore`` shares the scheduler store's SQLAlchemy engine and creates its own tables; each
method is one transaction. Like ``Store`` it is used from one thread at a time.
"""

from __future__ import annotations

from typing import cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
    delete,
    select,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Mapped, mapped_column, sessionmaker

from rota.scheduler.cluster.users import AuditEntry, UserRecord
from rota.scheduler.store.models import Base


class UserRow(Base):
    """One user: admin flag, accounts, uid/gid and the hash of their current token."""

    __tablename__ = "users"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    admin: Mapped[bool] = mapped_column(Boolean, default=False)
    accounts: Mapped[list[str]] = mapped_column(JSON, default=list)
    default_account: Mapped[str] = mapped_column(String(128), default="")
    uid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    gid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    token_hash: Mapped[str] = mapped_column(String(128), default="", index=True)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[float] = mapped_column(Float, default=0.0)


class AuditRow(Base):
    """One audit entry (admin action or refused request)."""

    __tablename__ = "audit"
    __table_args__ = (Index("ix_audit_time", "time"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    time: Mapped[float] = mapped_column(Float)
    user: Mapped[str] = mapped_column(String(128), default="")
    action: Mapped[str] = mapped_column(String(128))
    target: Mapped[str] = mapped_column(Text, default="")
    peer: Mapped[str] = mapped_column(String(256), default="")
    allowed: Mapped[bool] = mapped_column(Boolean, default=True)
    detail: Mapped[str] = mapped_column(Text, default="")


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


class UserStore:
    """Reads and writes users and audit entries."""

    def __init__(self, engine: Engine) -> None:
        tables = [cast(Table, UserRow.__table__), cast(Table, AuditRow.__table__)]
        Base.metadata.create_all(engine, tables=tables)
        self._sessions = sessionmaker(engine, expire_on_commit=False)

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
