"""Stored job-end webhooks still to deliver (SQLAlchemy Core). ``SqlJobRepository.save``
queues them in the transaction that ends their job; this repository hands them out and
records what became of them."""

from __future__ import annotations

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Engine

from rota.scheduler.cluster.model import JobEvent
from rota.scheduler.store.jobs import event_row, job_records
from rota.scheduler.store.models import EVENTS, JOBS, NOTICES
from rota.scheduler.store.protocols import Notice


class SqlNoticeRepository:
    """``NoticeRepository`` on one SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def claim(self, now: float, lease: float, limit: int) -> list[Notice]:
        """Up to ``limit`` webhooks due at ``now``, each with its job; each is leased (not due
        again) for ``lease`` seconds, so one whose result is lost to a crash is tried again."""
        n = NOTICES.c
        with self._engine.begin() as conn:
            rows = conn.execute(
                select(n.job_id, n.url, n.tries)
                .where(n.next_at <= now)
                .order_by(n.next_at)
                .limit(limit)
            ).all()
            if not rows:
                return []
            ids = [r.job_id for r in rows]
            conn.execute(update(NOTICES).where(n.job_id.in_(ids)).values(next_at=now + lease))
            stored = conn.execute(select(JOBS).where(JOBS.c.id.in_(ids))).all()
            jobs = {j.id: j for j in job_records(conn, stored)}
        return [Notice(jobs[r.job_id], r.url, r.tries) for r in rows if r.job_id in jobs]

    def done(self, job_id: int, event: JobEvent) -> None:
        """A webhook was delivered or given up: forget it and record ``event``."""
        with self._engine.begin() as conn:
            conn.execute(delete(NOTICES).where(NOTICES.c.job_id == job_id))
            conn.execute(insert(EVENTS), [event_row(event)])

    def retry(self, job_id: int, tries: int, next_at: float, event: JobEvent) -> None:
        """A webhook failed: try it again at ``next_at`` and record ``event``."""
        with self._engine.begin() as conn:
            conn.execute(
                update(NOTICES)
                .where(NOTICES.c.job_id == job_id)
                .values(tries=tries, next_at=next_at)
            )
            conn.execute(insert(EVENTS), [event_row(event)])
