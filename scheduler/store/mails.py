"""Stored job mails still to send (SQLAlchemy Core). ``SqlJobRepository.save`` queues them in
the transaction that records the change they tell of; this repository hands them out and
records what became of them."""

from __future__ import annotations

from sqlalchemy import and_, delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement

from rota.scheduler.cluster.model import JobEvent
from rota.scheduler.store.jobs import event_row, job_records
from rota.scheduler.store.models import EVENTS, JOBS, MAILS
from rota.scheduler.store.protocols import MailKey, StoredMail


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
