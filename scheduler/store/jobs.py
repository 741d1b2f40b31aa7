"""Stored jobs (SQLAlchemy Core): job rows, array specs, job events and submission request ids.

Array jobs are stored compactly: the spec once (``arrays``), one minimal row per task inserted
in bulk (one multi-row INSERT), and one "submitted" event for the whole array (``events`` of
any task starts with it). Reads share one ``JobSpec`` object among an array's tasks.

Each method is one transaction on its own pooled connection, so the repository may be used from
more than one thread (the core thread, and the thread that writes large submissions).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import (
    and_,
    bindparam,
    func,
    insert,
    literal,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Engine, Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import TableValuedAlias
from sqlalchemy.types import BigInteger

from rota.jobends import notice_wanted
from rota.jobspec import JobSpec
from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord
from rota.scheduler.store.array_mail import whole_arrays
from rota.scheduler.store.codec import alloc_from_json, alloc_to_json, spec_from_json, spec_to_json
from rota.scheduler.store.job_notices import event_webhooks, mails_of, queue_mails, queue_notices
from rota.scheduler.store.models import (
    ARRAYS,
    EVENTS,
    JOB_WEBHOOKS,
    JOBS,
    REQUESTS,
)
from rota.scheduler.store.protocols import DuplicateRequest, JobQuery
from rota.scheduler.store.writer import BackgroundWriter
from rota.states import TERMINAL_STATES, JobState

TERMINAL = [s.value for s in TERMINAL_STATES]
ROW_CHUNK = 1_000  # rows per statement where a write covers many jobs
_BATCH = 5_000  # rows per statement in bulk reads (keeps IN lists short)


def job_records(conn: Connection, rows: Sequence[Row[Any]]) -> list[JobRecord]:
    """Records of ``jobs`` rows; the tasks of one array share one JobSpec object."""
    wanted = {r.array_job_id for r in rows if r.array_job_id is not None and not r.spec}
    specs: dict[int, JobSpec] = {}
    ids = sorted(wanted)
    for start in range(0, len(ids), _BATCH):
        chunk = ids[start : start + _BATCH]
        for array_id, spec in conn.execute(
            select(ARRAYS.c.id, ARRAYS.c.spec).where(ARRAYS.c.id.in_(chunk))
        ):
            specs[array_id] = spec_from_json(spec)
    return [
        JobRecord(
            id=r.id,
            name=r.name,
            user=r.user,
            account=r.account,
            spec=specs[r.array_job_id] if not r.spec else spec_from_json(r.spec),
            state=JobState(r.state),
            submit_time=r.submit_time,
            time_limit=r.time_limit,
            reason=r.reason,
            exit_code=r.exit_code,
            attempt=r.attempt,
            start_time=r.start_time,
            end_time=r.end_time,
            held=r.held,
            array_job_id=r.array_job_id,
            array_task_id=r.array_task_id,
            allocation=alloc_from_json(r.allocation),
            stop_state=r.stop_state,
            partition=r.placed_partition or "",
            attained=r.attained or 0.0,
            preempted_at=tuple(r.preempted_at or ()),
        )
        for r in rows
    ]


def event_row(ev: JobEvent) -> dict[str, Any]:
    """The ``job_events`` row of ``ev``."""
    return {
        "job_id": ev.job_id,
        "time": ev.time,
        "attempt": ev.attempt,
        "kind": ev.kind.value,
        "old_state": ev.old_state,
        "new_state": ev.new_state,
        "reason": ev.reason,
    }


_MUTABLE = (
    "state",
    "reason",
    "exit_code",
    "attempt",
    "start_time",
    "end_time",
    "held",
    "allocation",
    "stop_state",
    "time_limit",
    "placed_partition",
    "attained",
    "preempted_at",
)
_UPDATE_JOB = (
    update(JOBS)
    .where(JOBS.c.id == bindparam("b_id"))
    .values({name: bindparam(f"b_{name}") for name in _MUTABLE})
)
_UPDATE_REASON = (
    update(JOBS)
    .where(JOBS.c.id == bindparam("b_id"), JOBS.c.state == JobState.PENDING.value)
    .values(reason=bindparam("b_reason"))
)


def _mutable(job: JobRecord) -> dict[str, Any]:
    """The parameters of ``_UPDATE_JOB`` for one job (its mutable fields)."""
    return {
        "b_id": job.id,
        "b_state": job.state.value,
        "b_reason": job.reason[:512],
        "b_exit_code": job.exit_code,
        "b_attempt": job.attempt,
        "b_start_time": job.start_time,
        "b_end_time": job.end_time,
        "b_held": job.held,
        "b_allocation": alloc_to_json(job.allocation),
        "b_stop_state": job.stop_state,
        "b_time_limit": job.time_limit,
        "b_placed_partition": job.partition or None,
        "b_attained": job.attained or None,
        "b_preempted_at": list(job.preempted_at) or None,
    }


def _job_values(job: JobRecord) -> dict[str, Any]:
    return {
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "state": job.state.value,
        "reason": job.reason,
        "submit_time": job.submit_time,
        "time_limit": job.time_limit,
        "held": job.held,
    }


def _submitted(job_id: int, job: JobRecord, why: str) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "time": job.submit_time,
        "attempt": 0,
        "old_state": "",
        "new_state": job.state.value,
        "reason": why,
    }


def _insert_jobs(conn: Connection, jobs: Sequence[JobRecord], user: str) -> list[JobRecord]:
    """Insert single jobs with their specs and submission events, each table in one statement
    executed for many rows (ids returned in order); returns them with their ids."""
    if not jobs:
        return []
    rows = [{"spec": spec_to_json(job.spec), **_job_values(job)} for job in jobs]
    stmt = insert(JOBS).returning(JOBS.c.id, sort_by_parameter_order=True)
    ids = conn.execute(stmt, rows).scalars().all()
    why = f"submitted by {user}"
    conn.execute(
        insert(EVENTS), [_submitted(i, job, why) for i, job in zip(ids, jobs, strict=True)]
    )
    return [dataclasses.replace(job, id=i) for i, job in zip(ids, jobs, strict=True)]


def _insert_array(conn: Connection, tasks: Sequence[JobRecord], user: str) -> list[JobRecord]:
    """Insert an array job: its spec once, a minimal row per task, and one submission event.

    The tasks share everything but ``array_task_id`` (the first task's fields are stored for
    all). On SQLite and PostgreSQL the task rows are one ``INSERT ... SELECT`` over the task
    ids (``json_each`` / ``unnest``): no per-row work in Python. Fills in ``id`` and
    ``array_job_id`` of ``tasks`` in place and returns them."""
    head = tasks[0]
    common = {**_job_values(head), "spec": {}}
    array_id = conn.execute(
        insert(JOBS).values(array_task_id=head.array_task_id, **common).returning(JOBS.c.id)
    ).scalar_one()
    conn.execute(update(JOBS).where(JOBS.c.id == array_id).values(array_job_id=array_id))
    conn.execute(insert(ARRAYS).values(id=array_id, spec=spec_to_json(head.spec), tasks=len(tasks)))
    rest = [t.array_task_id for t in tasks[1:]]
    source = _id_table(conn, rest)
    if source is None:
        rows = [{"array_task_id": task_id} for task_id in rest]
        conn.execute(insert(JOBS).values(array_job_id=array_id, **common), rows)
    elif rest:
        fields = {**common, "array_job_id": array_id}
        values = [literal(v, JOBS.c[k].type) for k, v in fields.items()]
        conn.execute(
            insert(JOBS).from_select([*fields, "array_task_id"], select(*values, source.c.value))
        )
    why = f"submitted by {user} (array of {len(tasks)} tasks)"
    conn.execute(insert(EVENTS).values(_submitted(array_id, head, why)))
    ids: dict[int | None, int] = dict(
        conn.execute(
            select(JOBS.c.array_task_id, JOBS.c.id).where(JOBS.c.array_job_id == array_id)
        ).all()
    )
    for task in tasks:
        task.id = ids[task.array_task_id]
        task.array_job_id = array_id
    return list(tasks)


def _id_table(conn: Connection, ids: list[int | None]) -> TableValuedAlias | None:
    """A one-column (``value``) table of ``ids`` in SQL, or None where not supported."""
    if conn.dialect.name == "sqlite":
        return func.json_each(json.dumps(ids)).table_valued("value")
    if conn.dialect.name == "postgresql":
        param = bindparam("task_ids", ids, type_=postgresql.ARRAY(BigInteger))
        return func.unnest(param).table_valued("value").render_derived()
    return None


class SqlJobRepository:
    """``JobRepository`` on one SQLAlchemy engine; why jobs wait is written by ``writer``.
    With ``mail``, state changes queue the mails jobs ask for (``--mail-type``)."""

    def __init__(self, engine: Engine, writer: BackgroundWriter, mail: bool = False) -> None:
        self._engine = engine
        self._writer = writer
        self._mail = mail

    def submit(
        self,
        jobs: Sequence[Sequence[JobRecord]],
        request_ids: Sequence[str],
        user: str,
    ) -> list[list[JobRecord]]:
        """Insert each group of jobs (one group per request: one job, or an array's tasks).

        Assigns ids; an array's tasks get ``array_job_id`` = the first task's id. Request ids
        (non-empty) are recorded with the display ids in the same transaction; they are unique
        (the primary key), so a concurrent duplicate raises DuplicateRequest and stores nothing.
        Returns the stored records.
        """
        try:
            return self._submit(jobs, request_ids, user)
        except IntegrityError:
            if self.known_requests(request_ids):
                raise DuplicateRequest("a client request id was stored concurrently") from None
            raise

    def _submit(
        self,
        jobs: Sequence[Sequence[JobRecord]],
        request_ids: Sequence[str],
        user: str,
    ) -> list[list[JobRecord]]:
        with self._engine.begin() as conn:
            out: list[list[JobRecord]] = []
            singles: list[JobRecord] = []  # consecutive single jobs, stored together
            for group in jobs:
                if len(group) == 1 and group[0].array_task_id is None:
                    singles.append(group[0])
                    continue
                out.extend([job] for job in _insert_jobs(conn, singles, user))
                singles = []
                out.append(_insert_array(conn, group, user))
            out.extend([job] for job in _insert_jobs(conn, singles, user))
            requests = [
                {"request_id": r, "user": user, "job_ids": [j.display_id for j in stored]}
                for r, stored in zip(request_ids, out, strict=True)
                if r
            ]
            if requests:
                conn.execute(insert(REQUESTS), requests)
        return out

    def known_requests(self, request_ids: Iterable[str]) -> dict[str, list[str]]:
        """Display ids already stored for these request ids."""
        ids = [r for r in request_ids if r]
        if not ids:
            return {}
        r = REQUESTS.c
        with self._engine.connect() as conn:
            rows = conn.execute(select(r.request_id, r.job_ids).where(r.request_id.in_(ids)))
            return {request_id: list(job_ids) for request_id, job_ids in rows}

    def save(self, jobs: Iterable[JobRecord], events: Iterable[JobEvent] = ()) -> None:
        """Write the mutable fields of these jobs and append events, in one transaction
        (one UPDATE and one INSERT statement, each executed for many rows). A job saved as
        ended whose ``notify`` wants that end gets its webhook queued in the same transaction
        (once: a job ends once), so does an event's ``webhook`` its job's ``notify`` wants,
        and a state change its ``mail_type`` asks for, its mail (an array's as a whole unless
        it asks for ``ARRAY_TASKS``)."""
        jobs = list(jobs)
        events = list(events)
        mails = mails_of(jobs, events) if self._mail else []
        params = [_mutable(j) for j in jobs]
        notices = [
            {"job_id": j.id, "url": j.spec.notify_url, "tries": 0, "next_at": j.end_time or 0.0}
            for j in jobs
            if notice_wanted(j.spec.notify_url, j.spec.notify_on, j.state)
        ]
        hooks = event_webhooks(jobs, events)
        rows = [event_row(ev) for ev in events]
        if not params and not rows:
            return
        with self._engine.begin() as conn:
            if params:
                conn.execute(_UPDATE_JOB, params)
            if rows:
                conn.execute(insert(EVENTS), rows)
            if notices:
                queue_notices(conn, notices)
            if hooks:
                conn.execute(insert(JOB_WEBHOOKS), hooks)
            mails = whole_arrays(conn, jobs, mails) if mails else []
            if mails:
                queue_mails(conn, mails)

    def write_reasons(self, reasons: Sequence[tuple[int, str]]) -> None:
        """Store why pending jobs wait, later and off the caller's thread, ``ROW_CHUNK``
        rows per transaction (so a plan with 100,000 new reasons holds no thread or write
        lock for long). A job that is no longer PENDING keeps its row as it is. Reasons are
        recomputed by every pass, so one lost to a crash is rebuilt by the next."""
        for start in range(0, len(reasons), ROW_CHUNK):
            chunk = [
                {"b_id": job_id, "b_reason": why[:512]}
                for job_id, why in reasons[start : start + ROW_CHUNK]
            ]
            self._writer.submit(self._write_reasons, chunk)

    def _write_reasons(self, rows: list[dict[str, Any]]) -> None:
        with self._engine.begin() as conn:
            conn.execute(_UPDATE_REASON, rows)

    def _select(self, stmt: Any) -> list[JobRecord]:
        with self._engine.connect() as conn:
            return job_records(conn, conn.execute(stmt).all())

    def active(self) -> list[JobRecord]:
        """Every job that is not in a terminal state, in id order."""
        return self._select(select(JOBS).where(JOBS.c.state.not_in(TERMINAL)).order_by("id"))

    def ended(self, since: float) -> list[JobRecord]:
        """Jobs in a terminal state that started and ended at or after ``since``, in end-time
        order (fair share is rebuilt from them at start-up)."""
        return self._select(
            select(JOBS)
            .where(
                JOBS.c.state.in_(TERMINAL),
                JOBS.c.start_time.is_not(None),
                JOBS.c.end_time >= since,
            )
            .order_by(JOBS.c.end_time, JOBS.c.id)
        )

    def query(self, query: JobQuery) -> list[JobRecord]:
        """Jobs matching ``query`` in id order (by id and by array task through indexes)."""
        c = JOBS.c
        stmt = select(JOBS).order_by(c.id)
        if query.states:
            stmt = stmt.where(c.state.in_([s.value for s in query.states]))
        if query.ids or query.array_ids:
            in_arrays: ColumnElement[bool] = c.array_job_id.in_(query.array_ids)
            if query.task_ids:
                in_arrays = and_(in_arrays, c.array_task_id.in_(query.task_ids))
            stmt = stmt.where(or_(c.id.in_(query.ids), in_arrays))
        if query.named:
            plain = [n for n, task in query.named if task is None]
            pairs = [(n, task) for n, task in query.named if task is not None]
            stmt = stmt.where(
                or_(
                    c.id.in_(plain),
                    c.array_job_id.in_(plain),
                    tuple_(c.array_job_id, c.array_task_id).in_(pairs),
                )
            )
        if query.users:
            stmt = stmt.where(c.user.in_(query.users))
        if query.accounts:
            stmt = stmt.where(c.account.in_(query.accounts))
        if query.private_to:
            live = [s.value for s in JobState if not s.terminal]
            stmt = stmt.where(or_(c.user == query.private_to, c.state.in_(live)))
        if query.after_id:
            stmt = stmt.where(c.id > query.after_id)
        if query.limit:
            stmt = stmt.limit(query.limit)
        return self._select(stmt)

    def events(self, job_id: int) -> list[JobEvent]:
        """The event history of one job, oldest first. An array task's history starts with
        its array's submission (stored once, on the array's first task)."""
        e = EVENTS.c
        with self._engine.connect() as conn:
            rows = list(conn.execute(select(EVENTS).where(e.job_id == job_id).order_by(e.id)))
            head = conn.execute(
                select(JOBS.c.array_job_id).where(JOBS.c.id == job_id)
            ).scalar_one_or_none()
            if head is not None and head != job_id and not (rows and rows[0].old_state == ""):
                first = conn.execute(
                    select(EVENTS).where(e.job_id == head).order_by(e.id).limit(1)
                ).first()
                if first is not None:
                    rows.insert(0, first)
        return [
            JobEvent(
                job_id, r.time, r.attempt, r.old_state, r.new_state, r.reason, HistoryKind(r.kind)
            )
            for r in rows
        ]
