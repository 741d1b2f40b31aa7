"""Stored mails still to send (SQLAlchemy Core): job mails, which ``SqlJobRepository.save``
queues in the transaction that records the change they tell of, and mails to reservations'
owners, which ``SqlReservationRepository.save`` queues with a give-back. These repositories
hand them out and record what became of them."""

from __future__ import annotations

from sqlalchemy import and_, delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement

from rota.scheduler.cluster.model import JobEvent
from rota.scheduler.store.jobs import event_row, job_records
from rota.scheduler.store.models import BOOKING_MAILS, EVENTS, JOBS, MAILS
from rota.scheduler.store.protocols import BookingMail, MailKey, StoredMail


def _is(key: MailKey) -> ColumnElement[bool]:
    m = MAILS.c
    return and_(m.job_id == key[0], m.attempt == key[1], m.kind == key[2])


class SqlMailRepository:
    """``MailRepository`` on one SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def claim(self, now: float, lease: float, limit: int) -> list[StoredMail]:
        """Up to ``limit`` mails due at ``now``, each with its job, each leased for
        ``lease`` seconds (one whose outcome a crash lost is sent again)."""
        m = MAILS.c
        with self._engine.begin() as conn:
            rows = conn.execute(
                select(m.job_id, m.attempt, m.kind, m.to, m.tries)
                .where(m.next_at <= now)
                .order_by(m.next_at)
                .limit(limit)
            ).all()
            if not rows:
                return []
            for r in rows:
                conn.execute(
                    update(MAILS).where(_is((r.job_id, r.attempt, r.kind))),
                    {"next_at": now + lease},
                )
            ids = list({r.job_id for r in rows})
            stored = conn.execute(select(JOBS).where(JOBS.c.id.in_(ids))).all()
            jobs = {j.id: j for j in job_records(conn, stored)}
        return [
            StoredMail(jobs[r.job_id], r.attempt, r.kind, r.to, r.tries)
            for r in rows
            if r.job_id in jobs
        ]

    def done(self, key: MailKey, event: JobEvent) -> None:
        """A mail was sent or given up: forget it and record ``event``."""
        with self._engine.begin() as conn:
            conn.execute(delete(MAILS).where(_is(key)))
            conn.execute(insert(EVENTS), [event_row(event)])

    def retry(self, key: MailKey, tries: int, next_at: float, event: JobEvent) -> None:
        """Sending failed: try again at ``next_at`` and record ``event``."""
        with self._engine.begin() as conn:
            conn.execute(update(MAILS).where(_is(key)).values(tries=tries, next_at=next_at))
            conn.execute(insert(EVENTS), [event_row(event)])


class SqlBookingMailRepository:
    """``BookingMailRepository`` on one SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def claim(self, now: float, lease: float, limit: int) -> list[BookingMail]:
        """Up to ``limit`` mails due at ``now``, each leased for ``lease`` seconds."""
        b = BOOKING_MAILS.c
        with self._engine.begin() as conn:
            rows = conn.execute(
                select(BOOKING_MAILS).where(b.next_at <= now).order_by(b.next_at).limit(limit)
            ).all()
            if rows:
                ids = [r.id for r in rows]
                conn.execute(update(BOOKING_MAILS).where(b.id.in_(ids)), {"next_at": now + lease})
        return [BookingMail(r.reservation, r.to, r.subject, r.body, r.id, r.tries) for r in rows]

    def done(self, id: int) -> None:
        """A mail was sent or given up: forget it."""
        with self._engine.begin() as conn:
            conn.execute(delete(BOOKING_MAILS).where(BOOKING_MAILS.c.id == id))

    def retry(self, id: int, tries: int, next_at: float) -> None:
        """Sending failed: try again at ``next_at``."""
        with self._engine.begin() as conn:
            conn.execute(
                update(BOOKING_MAILS)
                .where(BOOKING_MAILS.c.id == id)
                .values(tries=tries, next_at=next_at)
            )
