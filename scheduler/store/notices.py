"""Stored webhooks still to deliver (SQLAlchemy Core): job ends (``notifications``, one per
job) and the idle rules' (``job_webhooks``). ``SqlJobRepository.save`` queues them in the
transaction that records what they tell of; this repository hands them out, one per job at a
time in the order queued (a job's idle webhooks before its end), and records what became of
them."""

from __future__ import annotations

from sqlalchemy import delete, exists, insert, select, update
from sqlalchemy.engine import Connection, Engine

from rota.scheduler.cluster.model import JobEvent, JobRecord
from rota.scheduler.store.jobs import event_row, job_records
from rota.scheduler.store.models import EVENTS, JOB_WEBHOOKS, JOBS, NOTICES
from rota.scheduler.store.protocols import Notice


class SqlNoticeRepository:
    """``NoticeRepository`` on one SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def claim(self, now: float, lease: float, limit: int) -> list[Notice]:
        """Up to ``limit`` webhooks due at ``now``, each with its job and at most one per job
        (the first it queued: a job's end waits for its idle webhooks); each is leased (not
        due again) for ``lease`` seconds, so one whose result is lost to a crash is tried
        again."""
        w, n = JOB_WEBHOOKS.c, NOTICES.c
        earlier = JOB_WEBHOOKS.alias("earlier")
        with self._engine.begin() as conn:
            hooks = conn.execute(
                select(w.id, w.job_id, w.event, w.url, w.body, w.tries)
                .where(w.next_at <= now)
                .where(~exists().where(earlier.c.job_id == w.job_id, earlier.c.id < w.id))
                .order_by(w.next_at)
                .limit(limit)
            ).all()
            if hooks:
                ids = [h.id for h in hooks]
                conn.execute(update(JOB_WEBHOOKS).where(w.id.in_(ids)).values(next_at=now + lease))
            ends = conn.execute(
                select(n.job_id, n.url, n.tries)
                .where(n.next_at <= now)
                .where(~exists().where(w.job_id == n.job_id))
                .order_by(n.next_at)
                .limit(limit - len(hooks))
            ).all()
            if ends:
                ids = [r.job_id for r in ends]
                conn.execute(update(NOTICES).where(n.job_id.in_(ids)).values(next_at=now + lease))
            jobs = _jobs(conn, [h.job_id for h in hooks] + [r.job_id for r in ends])
        out = [
            Notice(jobs[h.job_id], h.url, h.tries, h.id, h.event, h.body)
            for h in hooks
            if h.job_id in jobs
        ]
        return out + [Notice(jobs[r.job_id], r.url, r.tries) for r in ends if r.job_id in jobs]

    def done(self, job_id: int, event: JobEvent, webhook_id: int = 0) -> None:
        """A webhook was delivered or given up: forget it and record ``event``."""
        with self._engine.begin() as conn:
            if webhook_id:
                conn.execute(delete(JOB_WEBHOOKS).where(JOB_WEBHOOKS.c.id == webhook_id))
            else:
                conn.execute(delete(NOTICES).where(NOTICES.c.job_id == job_id))
            conn.execute(insert(EVENTS), [event_row(event)])

    def retry(
        self, job_id: int, tries: int, next_at: float, event: JobEvent, webhook_id: int = 0
    ) -> None:
        """A webhook failed: try it again at ``next_at`` and record ``event``."""
        with self._engine.begin() as conn:
            if webhook_id:
                where = JOB_WEBHOOKS.c.id == webhook_id
                conn.execute(update(JOB_WEBHOOKS).where(where).values(tries=tries, next_at=next_at))
            else:
                where = NOTICES.c.job_id == job_id
                conn.execute(update(NOTICES).where(where).values(tries=tries, next_at=next_at))
            conn.execute(insert(EVENTS), [event_row(event)])


def _jobs(conn: Connection, ids: list[int]) -> dict[int, JobRecord]:
    """The records of jobs ``ids``, by id."""
    if not ids:
        return {}
    stored = conn.execute(select(JOBS).where(JOBS.c.id.in_(set(ids)))).all()
    return {j.id: j for j in job_records(conn, stored)}
