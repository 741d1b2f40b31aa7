"""Stored reservations (SQLAlchemy ORM; one transaction per method; the core thread only)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from rota.scheduler.cluster.reservation import Reservation
from rota.scheduler.store.models import BookingMailRow, BookingUsageRow, ReservationRow
from rota.scheduler.store.protocols import BookingMail, WindowUsage


class SqlReservationRepository:
    """``ReservationRepository`` over a session factory."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def current(self, now: float) -> list[Reservation]:
        """Every reservation whose window has not ended at ``now``, earliest first."""
        with self._sessions() as session:
            rows = session.scalars(
                select(ReservationRow)
                .where(ReservationRow.end > now)
                .order_by(ReservationRow.start, ReservationRow.name)
            )
            return [_record(r) for r in rows]

    def exists(self, name: str) -> bool:
        with self._sessions() as session:
            return session.get(ReservationRow, name) is not None

    def save(self, r: Reservation, mails: Sequence[BookingMail] = (), at: float = 0.0) -> None:
        """Insert or replace ``r``; in the same transaction queue ``mails``, due at ``at``."""
        with self._sessions() as session, session.begin():
            session.merge(
                ReservationRow(
                    name=r.name,
                    start=r.start,
                    end=r.end,
                    gpus={node: list(idx) for node, idx in r.gpus.items()},
                    users=list(r.users),
                    accounts=list(r.accounts),
                    flags=list(r.flags),
                    lend=r.lend,
                    created_by=r.created_by,
                    created_at=r.created_at,
                    unused=r.unused,
                    given_back=r.given_back,
                )
            )
            session.add_all(
                BookingMailRow(
                    reservation=m.reservation, to=m.to, subject=m.subject, body=m.body, next_at=at
                )
                for m in mails
            )

    def delete(self, name: str) -> None:
        with self._sessions() as session, session.begin():
            row = session.get(ReservationRow, name)
            if row is not None:
                session.delete(row)

    def record_usage(self, windows: Sequence[WindowUsage]) -> None:
        """Store how these ended windows were spent."""
        with self._sessions() as session, session.begin():
            session.add_all(
                BookingUsageRow(
                    name=w.name,
                    user=w.user,
                    start=w.start,
                    end=w.end,
                    booked=w.booked,
                    used=w.used,
                    lent=w.lent,
                    released=w.released,
                )
                for w in windows
            )

    def booked_unused(self, start: float, end: float) -> dict[str, float]:
        """GPU-seconds booked but not used by their owners, per user who booked, of the
        windows that ended in ``[start, end]`` (0: unbounded)."""
        row = BookingUsageRow
        unused = func.sum(row.booked - row.used)
        query = select(row.user, unused).group_by(row.user)
        if start:
            query = query.where(row.end >= start)
        if end:
            query = query.where(row.end <= end)
        with self._sessions() as session:
            return {user: max(0.0, float(total or 0.0)) for user, total in session.execute(query)}


def _record(row: ReservationRow) -> Reservation:
    return Reservation(
        name=row.name,
        start=row.start,
        end=row.end,
        gpus={node: tuple(idx) for node, idx in row.gpus.items()},
        users=tuple(row.users),
        accounts=tuple(row.accounts),
        flags=tuple(row.flags),
        lend=bool(row.lend),
        created_by=row.created_by,
        created_at=row.created_at,
        unused=row.unused,
        given_back=row.given_back,
    )
