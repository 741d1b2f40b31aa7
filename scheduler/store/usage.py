"""Stored NVML figures of jobs, the finished-job listing of accounting, and job retention
(SQLAlchemy Core; one transaction per method)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import and_, delete, insert, or_, select
from sqlalchemy.engine import Engine, Row

from rota.scheduler.cluster.accounting import AccountingQuery, FinishedJob, JobUsage
from rota.scheduler.store.jobs import ROW_CHUNK, TERMINAL, job_records
from rota.scheduler.store.models import ARRAYS, EVENTS, JOB_WEBHOOKS, JOBS, NOTICES, USAGE

_PURGE_CHUNK = 500  # jobs per DELETE statement when purging


class SqlUsageRepository:
    """``UsageRepository`` on one SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def save(self, usages: Iterable[JobUsage]) -> None:
        """Insert or replace the NVML figures of these jobs, in one transaction (a DELETE and
        an INSERT per ``ROW_CHUNK`` jobs, not a statement per job)."""
        rows = {
            u.job_id: {
                "job_id": u.job_id,
                "util_sum": u.util_sum,
                "samples": u.samples,
                "memory_peak": u.memory_peak,
                "memory_total": u.memory_total,
            }
            for u in usages
        }
        if not rows:
            return
        ids = list(rows)
        with self._engine.begin() as conn:
            for start in range(0, len(ids), ROW_CHUNK):
                chunk = ids[start : start + ROW_CHUNK]
                conn.execute(delete(USAGE).where(USAGE.c.job_id.in_(chunk)))
                conn.execute(insert(USAGE), [rows[i] for i in chunk])

    def finished(self, query: AccountingQuery) -> list[FinishedJob]:
        """Jobs in a terminal state matching ``query``, most recent end first, each with its
        NVML figures (zero samples when none were recorded)."""
        usage, c = USAGE.c, JOBS.c
        stmt = (
            select(
                JOBS,
                usage.util_sum,
                usage.samples,
                usage.memory_peak,
                usage.memory_total,
                usage.job_id.label("usage_job"),
            )
            .outerjoin(USAGE, usage.job_id == c.id)
            .where(c.state.in_([s.value for s in query.states] or TERMINAL))
            .order_by(c.end_time.desc(), c.id.desc())
        )
        if query.start:
            stmt = stmt.where(c.end_time >= query.start)
        if query.end:
            stmt = stmt.where(c.end_time <= query.end)
        if query.ids or query.array_ids or query.tasks:
            stmt = stmt.where(
                or_(
                    c.id.in_(query.ids),
                    c.array_job_id.in_(query.array_ids),
                    *(and_(c.array_job_id == a, c.array_task_id == t) for a, t in query.tasks),
                )
            )
        for column, values in ((c.user, query.users), (c.account, query.accounts)):
            if values:
                stmt = stmt.where(column.in_(values))
        if query.principal:
            stmt = stmt.where(c.user == query.principal)
        if query.limit:
            stmt = stmt.limit(query.limit)
        with self._engine.connect() as conn:
            rows: list[Row[Any]] = list(conn.execute(stmt))
            records = job_records(conn, rows)
        return [
            FinishedJob(
                job,
                JobUsage(job.id)
                if r.usage_job is None
                else JobUsage(job.id, r.util_sum, r.samples, r.memory_peak, r.memory_total),
            )
            for job, r in zip(records, rows, strict=True)
        ]

    def purge_ended(self, before: float) -> int:
        """Forget jobs that ended before ``before`` (their events, NVML figures and queued
        webhooks too); return how many."""
        c = JOBS.c
        with self._engine.begin() as conn:
            ids = list(
                conn.execute(
                    select(c.id).where(c.state.in_(TERMINAL), c.end_time < before)
                ).scalars()
            )
            for start in range(0, len(ids), _PURGE_CHUNK):
                chunk = ids[start : start + _PURGE_CHUNK]
                conn.execute(delete(USAGE).where(USAGE.c.job_id.in_(chunk)))
                conn.execute(delete(NOTICES).where(NOTICES.c.job_id.in_(chunk)))
                conn.execute(delete(JOB_WEBHOOKS).where(JOB_WEBHOOKS.c.job_id.in_(chunk)))
                conn.execute(delete(EVENTS).where(EVENTS.c.job_id.in_(chunk)))
                conn.execute(delete(JOBS).where(c.id.in_(chunk)))
            if ids:  # an array's spec goes with its last task
                live = select(c.array_job_id).where(c.array_job_id.is_not(None))
                conn.execute(delete(ARRAYS).where(ARRAYS.c.id.not_in(live)))
        return len(ids)
