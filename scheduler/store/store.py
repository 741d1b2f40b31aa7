"""The storage interface: every database read and write of the scheduler goes through ``Store``.

Any SQLAlchemy URL works; SQLite (the embedded default) runs in WAL mode. Each public method is
one transaction on its own pooled connection, so the store may be used from more than one thread
(the scheduler's core thread, and the thread that writes large submissions).

Array jobs are stored compactly: the spec once (``arrays``), one minimal row per task inserted
in bulk (one multi-row INSERT), and one "submitted" event for the whole array (``events`` of
any task starts with it). Reads share one ``JobSpec`` object among an array's tasks.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from sqlalchemy import (
    Table,
    and_,
    bindparam,
    create_engine,
    delete,
    event,
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
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import TableValuedAlias
from sqlalchemy.types import BigInteger

from rota.gpus import GpuInfo, GpuLink
from rota.jobends import notice_wanted
from rota.jobspec import JobSpec, Mount
from rota.messages import Inventory
from rota.scheduler.cluster.accounting import AccountingQuery, FinishedJob, JobUsage
from rota.scheduler.cluster.gpus import GpuMark
from rota.scheduler.cluster.model import (
    AdminState,
    HistoryKind,
    JobEvent,
    JobRecord,
    NodeAlloc,
    NodeState,
)
from rota.scheduler.store.models import (
    ArrayRow,
    Base,
    GpuMarkRow,
    JobEventRow,
    JobRow,
    JobUsageRow,
    NodeRow,
    NotificationRow,
    SubmitRequestRow,
)
from rota.states import TERMINAL_STATES, JobState

_TERMINAL = [s.value for s in TERMINAL_STATES]


_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(JobSpec))


def spec_to_json(spec: JobSpec) -> dict[str, Any]:
    """A JSON-safe dict of a JobSpec (field by field: ``dataclasses.asdict``'s deep copies were
    half the cost of storing a submission)."""
    data = {name: getattr(spec, name) for name in _SPEC_FIELDS}
    data["command"] = list(spec.command)
    data["notify_on"] = list(spec.notify_on)
    data["mounts"] = [dataclasses.asdict(m) for m in spec.mounts]
    data["node_selector"] = dict(spec.node_selector)
    data["env"] = dict(spec.env)
    return data


def spec_from_json(data: dict[str, Any]) -> JobSpec:
    """The inverse of spec_to_json; unknown keys (from newer versions) are ignored."""
    known = {f.name for f in dataclasses.fields(JobSpec)}
    values = {k: v for k, v in data.items() if k in known}
    values["command"] = tuple(values.get("command", ()))
    values["mounts"] = tuple(Mount(**m) for m in values.get("mounts", ()))
    values["notify_on"] = tuple(values.get("notify_on", ()))
    return JobSpec(**values)


def _alloc_to_json(allocation: Sequence[NodeAlloc]) -> list[dict[str, Any]] | None:
    if not allocation:
        return None
    return [
        {
            "node": a.node,
            "gpus": list(a.gpus),
            "uuids": list(a.uuids),
            "cpus": a.cpus,
            "memory": a.memory,
            "port": a.port,
        }
        for a in allocation
    ]


def _alloc_from_json(data: Any) -> list[NodeAlloc]:
    if not data:
        return []
    return [
        NodeAlloc(
            d["node"],
            tuple(d["gpus"]),
            tuple(d.get("uuids", ())),
            d.get("cpus", 0.0),
            d.get("memory", 0),
            d.get("port", 0),
        )
        for d in data
    ]


# The mapped classes' tables, typed as the Tables they are (``__table__`` is typed FromClause).
_JOBS = cast(Table, JobRow.__table__)
_EVENTS = cast(Table, JobEventRow.__table__)
_ARRAYS = cast(Table, ArrayRow.__table__)
_NODES = cast(Table, NodeRow.__table__)
_NOTICES = cast(Table, NotificationRow.__table__)
_REQUESTS = cast(Table, SubmitRequestRow.__table__)
_USAGE = cast(Table, JobUsageRow.__table__)
_BATCH = 5_000  # rows per statement in bulk reads (keeps IN lists short)


def _records(conn: Connection, rows: Sequence[Row[Any]]) -> list[JobRecord]:
    """Records of ``jobs`` rows; the tasks of one array share one JobSpec object."""
    wanted = {r.array_job_id for r in rows if r.array_job_id is not None and not r.spec}
    specs: dict[int, JobSpec] = {}
    ids = sorted(wanted)
    for start in range(0, len(ids), _BATCH):
        chunk = ids[start : start + _BATCH]
        for array_id, spec in conn.execute(
            select(_ARRAYS.c.id, _ARRAYS.c.spec).where(_ARRAYS.c.id.in_(chunk))
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
            allocation=_alloc_from_json(r.allocation),
            stop_state=r.stop_state,
        )
        for r in rows
    ]


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
)
_UPDATE_JOB = (
    update(_JOBS)
    .where(_JOBS.c.id == bindparam("b_id"))
    .values({name: bindparam(f"b_{name}") for name in _MUTABLE})
)


_UPDATE_REASON = (
    update(_JOBS)
    .where(_JOBS.c.id == bindparam("b_id"), _JOBS.c.state == JobState.PENDING.value)
    .values(reason=bindparam("b_reason"))
)
_ROW_CHUNK = 1_000  # rows per statement where a write covers many jobs


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
        "b_allocation": _alloc_to_json(job.allocation),
        "b_stop_state": job.stop_state,
        "b_time_limit": job.time_limit,
    }


def inventory_to_json(inv: Inventory) -> dict[str, Any]:
    data = dataclasses.asdict(inv)
    data["labels"] = dict(inv.labels)
    return data


def inventory_from_json(data: dict[str, Any] | None) -> Inventory:
    if not data:
        return Inventory()
    return Inventory(
        gpus=tuple(GpuInfo(**g) for g in data.get("gpus", ())),
        links=tuple(GpuLink(**link) for link in data.get("links", ())),
        driver_version=data.get("driver_version", ""),
        cuda_version=data.get("cuda_version", ""),
        simulated=data.get("simulated", False),
        note=data.get("note", ""),
        cpus=data.get("cpus", 0.0),
        memory=data.get("memory", 0),
        labels=data.get("labels", {}),
        gpu_mode=data.get("gpu_mode", ""),
    )


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
    stmt = insert(_JOBS).returning(_JOBS.c.id, sort_by_parameter_order=True)
    ids = conn.execute(stmt, rows).scalars().all()
    why = f"submitted by {user}"
    conn.execute(
        insert(_EVENTS), [_submitted(i, job, why) for i, job in zip(ids, jobs, strict=True)]
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
        insert(_JOBS).values(array_task_id=head.array_task_id, **common).returning(_JOBS.c.id)
    ).scalar_one()
    conn.execute(update(_JOBS).where(_JOBS.c.id == array_id).values(array_job_id=array_id))
    conn.execute(
        insert(_ARRAYS).values(id=array_id, spec=spec_to_json(head.spec), tasks=len(tasks))
    )
    rest = [t.array_task_id for t in tasks[1:]]
    source = _id_table(conn, rest)
    if source is None:
        rows = [{"array_task_id": task_id} for task_id in rest]
        conn.execute(insert(_JOBS).values(array_job_id=array_id, **common), rows)
    elif rest:
        fields = {**common, "array_job_id": array_id}
        values = [literal(v, _JOBS.c[k].type) for k, v in fields.items()]
        conn.execute(
            insert(_JOBS).from_select([*fields, "array_task_id"], select(*values, source.c.value))
        )
    why = f"submitted by {user} (array of {len(tasks)} tasks)"
    conn.execute(insert(_EVENTS).values(_submitted(array_id, head, why)))
    ids: dict[int | None, int] = dict(
        conn.execute(
            select(_JOBS.c.array_task_id, _JOBS.c.id).where(_JOBS.c.array_job_id == array_id)
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


@dataclasses.dataclass(frozen=True)
class JobQuery:
    """Filters of a job listing; empty filters match everything."""

    states: tuple[JobState, ...] = ()
    ids: tuple[int, ...] = ()  # job row ids
    array_ids: tuple[int, ...] = ()  # all tasks of these array jobs
    task_ids: tuple[int, ...] = ()  # with array_ids: only these task ids of those arrays
    # display ids, parsed: (123, None) is job 123 or every task of array 123; (123, 4) is 123_4
    named: tuple[tuple[int, int | None], ...] = ()
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    after_id: int = 0
    limit: int = 0
    private_to: str = ""  # a user: other users' ended jobs are left out (gacct's PrivateData)

    def matcher(self) -> Callable[[JobRecord], bool]:
        """The filters other than ids, array ids, ``after_id`` and ``limit``, in memory (the
        same rules ``Store.query_jobs`` applies in SQL)."""
        states, users, accounts = set(self.states), set(self.users), set(self.accounts)
        plain = {n for n, task in self.named if task is None}
        pairs = {(n, task) for n, task in self.named if task is not None}

        def match(job: JobRecord) -> bool:
            return (
                (not states or job.state in states)
                and (not users or job.user in users)
                and (not accounts or job.account in accounts)
                and (not self.private_to or not job.state.terminal or job.user == self.private_to)
                and (
                    not self.named
                    or (job.id in plain and job.array_job_id is None)
                    or job.array_job_id in plain
                    or (job.array_job_id, job.array_task_id) in pairs
                )
            )

        return match


@dataclasses.dataclass(frozen=True, slots=True)
class Notice:
    """A job-end webhook due: the ended job, where to post, how many tries failed so far."""

    job: JobRecord
    url: str
    tries: int


def _add_notices(conn: Connection, notices: list[dict[str, Any]]) -> None:
    """Queue webhooks of jobs that ended; one already queued for a job stays as it is."""
    n = _NOTICES.c
    queued = set(
        conn.execute(select(n.job_id).where(n.job_id.in_([x["job_id"] for x in notices]))).scalars()
    )
    fresh = [x for x in notices if x["job_id"] not in queued]
    if fresh:
        conn.execute(insert(_NOTICES), fresh)


def _event_row(ev: JobEvent) -> dict[str, Any]:
    return {
        "job_id": ev.job_id,
        "time": ev.time,
        "attempt": ev.attempt,
        "kind": ev.kind.value,
        "old_state": ev.old_state,
        "new_state": ev.new_state,
        "reason": ev.reason,
    }


class DuplicateRequest(Exception):
    """A client request id was stored by another writer between the check and the insert."""


class Store:
    """Durable state of the scheduler behind one SQLAlchemy engine."""

    def __init__(self, url: str) -> None:
        kwargs: dict[str, Any] = {}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        self.engine: Engine = create_engine(url, **kwargs)
        if url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)
        Base.metadata.create_all(self.engine)
        for index in _JOBS.indexes:  # tables made by older versions lack newer indexes
            index.create(self.engine, checkfirst=True)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._reason_writer = ThreadPoolExecutor(1, thread_name_prefix="rota-reasons")

    def close(self) -> None:
        """Finish the reason writes under way, then close every connection."""
        self._reason_writer.shutdown(wait=True)
        self.engine.dispose()

    def write_reasons(self, reasons: Sequence[tuple[int, str]]) -> None:
        """Store why pending jobs wait, later and off the caller's thread, ``_ROW_CHUNK``
        rows per transaction (so a plan with 100,000 new reasons holds no thread or write
        lock for long). A job that is no longer PENDING keeps its row as it is. Reasons are
        recomputed by every pass, so one lost to a crash is rebuilt by the next."""
        for start in range(0, len(reasons), _ROW_CHUNK):
            chunk = [
                {"b_id": job_id, "b_reason": why[:512]}
                for job_id, why in reasons[start : start + _ROW_CHUNK]
            ]
            self._reason_writer.submit(self._write_reasons, chunk)

    def _write_reasons(self, rows: list[dict[str, Any]]) -> None:
        with self.engine.begin() as conn:
            conn.execute(_UPDATE_REASON, rows)

    def _session(self) -> Session:
        return self._sessions()

    # -------------------------------------------------------------- jobs

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
        with self.engine.begin() as conn:
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
                conn.execute(insert(_REQUESTS), requests)
        return out

    def known_requests(self, request_ids: Iterable[str]) -> dict[str, list[str]]:
        """Display ids already stored for these request ids."""
        ids = [r for r in request_ids if r]
        if not ids:
            return {}
        with self._session() as session:
            rows = session.scalars(
                select(SubmitRequestRow).where(SubmitRequestRow.request_id.in_(ids))
            )
            return {r.request_id: list(r.job_ids) for r in rows}

    def save(self, jobs: Iterable[JobRecord], events: Iterable[JobEvent] = ()) -> None:
        """Write the mutable fields of these jobs and append events, in one transaction
        (one UPDATE and one INSERT statement, each executed for many rows). A job saved as
        ended whose ``notify`` wants that end gets its webhook queued in the same transaction
        (once: a job ends once)."""
        jobs = list(jobs)
        params = [_mutable(j) for j in jobs]
        notices = [
            {"job_id": j.id, "url": j.spec.notify_url, "tries": 0, "next_at": j.end_time or 0.0}
            for j in jobs
            if notice_wanted(j.spec.notify_url, j.spec.notify_on, j.state)
        ]
        rows = [_event_row(ev) for ev in events]
        if not params and not rows:
            return
        with self.engine.begin() as conn:
            if params:
                conn.execute(_UPDATE_JOB, params)
            if rows:
                conn.execute(insert(_EVENTS), rows)
            if notices:
                _add_notices(conn, notices)

    def _select(self, stmt: Any) -> list[JobRecord]:
        with self.engine.connect() as conn:
            return _records(conn, conn.execute(stmt).all())

    def active_jobs(self) -> list[JobRecord]:
        """Every job that is not in a terminal state, in id order."""
        return self._select(select(_JOBS).where(_JOBS.c.state.not_in(_TERMINAL)).order_by("id"))

    def ended_jobs(self, since: float) -> list[JobRecord]:
        """Jobs in a terminal state that started and ended at or after ``since``, in end-time
        order (fair share is rebuilt from them at start-up)."""
        return self._select(
            select(_JOBS)
            .where(
                _JOBS.c.state.in_(_TERMINAL),
                _JOBS.c.start_time.is_not(None),
                _JOBS.c.end_time >= since,
            )
            .order_by(_JOBS.c.end_time, _JOBS.c.id)
        )

    def query_jobs(self, query: JobQuery) -> list[JobRecord]:
        """Jobs matching ``query`` in id order (by id and by array task through indexes)."""
        c = _JOBS.c
        stmt = select(_JOBS).order_by(c.id)
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
                    and_(c.id.in_(plain), c.array_job_id.is_(None)),
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

    def job_states(self, ids: Iterable[int]) -> dict[int, JobState]:
        """Current state of each existing job id."""
        id_list = list(ids)
        if not id_list:
            return {}
        with self._session() as session:
            rows = session.execute(select(JobRow.id, JobRow.state).where(JobRow.id.in_(id_list)))
            return {row_id: JobState(state) for row_id, state in rows}

    def array_tasks(self, array_ids: Iterable[int]) -> dict[int, list[int]]:
        """Task row ids of each array job id."""
        id_list = list(array_ids)
        if not id_list:
            return {}
        out: dict[int, list[int]] = {}
        with self._session() as session:
            rows = session.execute(
                select(JobRow.array_job_id, JobRow.id).where(JobRow.array_job_id.in_(id_list))
            )
            for array_id, row_id in rows:
                if array_id is not None:  # the query asks for arrays' rows only
                    out.setdefault(array_id, []).append(row_id)
        return out

    def events(self, job_id: int) -> list[JobEvent]:
        """The event history of one job, oldest first. An array task's history starts with
        its array's submission (stored once, on the array's first task)."""
        e = _EVENTS.c
        with self.engine.connect() as conn:
            rows = list(conn.execute(select(_EVENTS).where(e.job_id == job_id).order_by(e.id)))
            head = conn.execute(
                select(_JOBS.c.array_job_id).where(_JOBS.c.id == job_id)
            ).scalar_one_or_none()
            if head is not None and head != job_id and not (rows and rows[0].old_state == ""):
                first = conn.execute(
                    select(_EVENTS).where(e.job_id == head).order_by(e.id).limit(1)
                ).first()
                if first is not None:
                    rows.insert(0, first)
        return [
            JobEvent(
                job_id, r.time, r.attempt, r.old_state, r.new_state, r.reason, HistoryKind(r.kind)
            )
            for r in rows
        ]

    # -------------------------------------------------------------- notifications

    def claim_notices(self, now: float, lease: float, limit: int) -> list[Notice]:
        """Up to ``limit`` webhooks due at ``now``, each with its job; each is leased (not due
        again) for ``lease`` seconds, so one whose result is lost to a crash is tried again."""
        n = _NOTICES.c
        with self.engine.begin() as conn:
            rows = conn.execute(
                select(n.job_id, n.url, n.tries)
                .where(n.next_at <= now)
                .order_by(n.next_at)
                .limit(limit)
            ).all()
            if not rows:
                return []
            ids = [r.job_id for r in rows]
            conn.execute(update(_NOTICES).where(n.job_id.in_(ids)).values(next_at=now + lease))
            jobs = {
                j.id: j
                for j in _records(
                    conn, conn.execute(select(_JOBS).where(_JOBS.c.id.in_(ids))).all()
                )
            }
        return [Notice(jobs[r.job_id], r.url, r.tries) for r in rows if r.job_id in jobs]

    def notice_done(self, job_id: int, event: JobEvent) -> None:
        """A webhook was delivered or given up: forget it and record ``event``."""
        with self.engine.begin() as conn:
            conn.execute(delete(_NOTICES).where(_NOTICES.c.job_id == job_id))
            conn.execute(insert(_EVENTS), [_event_row(event)])

    def notice_retry(self, job_id: int, tries: int, next_at: float, event: JobEvent) -> None:
        """A webhook failed: try it again at ``next_at`` and record ``event``."""
        with self.engine.begin() as conn:
            conn.execute(
                update(_NOTICES)
                .where(_NOTICES.c.job_id == job_id)
                .values(tries=tries, next_at=next_at)
            )
            conn.execute(insert(_EVENTS), [_event_row(event)])

    # -------------------------------------------------------------- accounting

    def save_usage(self, usages: Iterable[JobUsage]) -> None:
        """Insert or replace the NVML figures of these jobs, in one transaction (a DELETE and
        an INSERT per ``_ROW_CHUNK`` jobs, not a statement per job)."""
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
        with self.engine.begin() as conn:
            for start in range(0, len(ids), _ROW_CHUNK):
                chunk = ids[start : start + _ROW_CHUNK]
                conn.execute(delete(_USAGE).where(_USAGE.c.job_id.in_(chunk)))
                conn.execute(insert(_USAGE), [rows[i] for i in chunk])

    def finished_jobs(self, query: AccountingQuery) -> list[FinishedJob]:
        """Jobs in a terminal state matching ``query``, most recent end first, each with its
        NVML figures (zero samples when none were recorded)."""
        usage = _USAGE.c
        stmt = (
            select(
                _JOBS,
                usage.util_sum,
                usage.samples,
                usage.memory_peak,
                usage.memory_total,
                usage.job_id.label("usage_job"),
            )
            .outerjoin(_USAGE, usage.job_id == _JOBS.c.id)
            .where(JobRow.state.in_([s.value for s in query.states] or _TERMINAL))
            .order_by(JobRow.end_time.desc(), JobRow.id.desc())
        )
        if query.start:
            stmt = stmt.where(JobRow.end_time >= query.start)
        if query.end:
            stmt = stmt.where(JobRow.end_time <= query.end)
        if query.ids or query.array_ids or query.tasks:
            stmt = stmt.where(
                or_(
                    JobRow.id.in_(query.ids),
                    JobRow.array_job_id.in_(query.array_ids),
                    *(
                        and_(JobRow.array_job_id == a, JobRow.array_task_id == t)
                        for a, t in query.tasks
                    ),
                )
            )
        for column, values in ((JobRow.user, query.users), (JobRow.account, query.accounts)):
            if values:
                stmt = stmt.where(column.in_(values))
        if query.principal:
            stmt = stmt.where(JobRow.user == query.principal)
        if query.limit:
            stmt = stmt.limit(query.limit)
        with self.engine.connect() as conn:
            rows: list[Row[Any]] = list(conn.execute(stmt))
            records = _records(conn, rows)
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
        """Forget jobs that ended before ``before`` (their events and NVML figures too);
        return how many."""
        with self._session() as session, session.begin():
            ids = list(
                session.scalars(
                    select(JobRow.id).where(JobRow.state.in_(_TERMINAL), JobRow.end_time < before)
                )
            )
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                session.execute(delete(JobUsageRow).where(JobUsageRow.job_id.in_(chunk)))
                session.execute(delete(NotificationRow).where(NotificationRow.job_id.in_(chunk)))
                session.execute(delete(JobEventRow).where(JobEventRow.job_id.in_(chunk)))
                session.execute(delete(JobRow).where(JobRow.id.in_(chunk)))
            if ids:  # an array's spec goes with its last task
                live = select(JobRow.array_job_id).where(JobRow.array_job_id.is_not(None))
                session.execute(delete(ArrayRow).where(ArrayRow.id.not_in(live)))
        return len(ids)

    # -------------------------------------------------------------- nodes

    def nodes(self) -> list[NodeState]:
        """Every registered node as last stored (connection fields at their defaults)."""
        with self._session() as session:
            return [
                NodeState(
                    name=r.name,
                    token_hash=r.token_hash,
                    labels=dict(r.labels or {}),
                    admin_state=AdminState(r.admin_state),
                    reason=r.reason,
                    reason_by=r.reason_by,
                    reason_time=r.reason_time,
                    inventory=inventory_from_json(r.inventory),
                    address=r.address,
                    last_heartbeat=r.last_seen,
                )
                for r in session.scalars(select(NodeRow).order_by(NodeRow.name))
            ]

    def save_node(self, node: NodeState) -> None:
        """Insert or update a node's durable fields (an UPDATE, then an INSERT when there was
        no row: every agent hello saves its node, and the ORM's load-and-flush cost ~10 ms of
        core thread per hello during a 10,000-node ramp)."""
        values = {
            "token_hash": node.token_hash,
            "labels": dict(node.labels),
            "admin_state": node.admin_state.value,
            "reason": node.reason,
            "reason_by": node.reason_by,
            "reason_time": node.reason_time,
            "inventory": inventory_to_json(node.inventory),
            "address": node.address,
            "last_seen": node.last_heartbeat,
        }
        with self.engine.begin() as conn:
            updated = conn.execute(update(_NODES).where(_NODES.c.name == node.name), values)
            if updated.rowcount == 0:
                conn.execute(insert(_NODES), {"name": node.name, **values})

    def delete_node(self, name: str) -> None:
        with self._session() as session, session.begin():
            row = session.get(NodeRow, name)
            if row is not None:
                session.delete(row)

    # -------------------------------------------------------------- GPU health

    def gpu_marks(self) -> dict[str, list[GpuMark]]:
        """Every GPU taken out of service, per node name."""
        out: dict[str, list[GpuMark]] = {}
        with self._session() as session:
            for r in session.scalars(
                select(GpuMarkRow).order_by(GpuMarkRow.node, GpuMarkRow.index)
            ):
                mark = GpuMark(r.index, r.uuid, r.reason, r.since, r.marked_by)
                out.setdefault(r.node, []).append(mark)
        return out

    def save_gpu_marks(self, node: str, marks: Iterable[GpuMark]) -> None:
        """Replace the stored marks of one node with ``marks``."""
        with self._session() as session, session.begin():
            for row in session.scalars(select(GpuMarkRow).where(GpuMarkRow.node == node)):
                session.delete(row)
            session.flush()
            for m in marks:
                session.add(
                    GpuMarkRow(
                        node=node,
                        index=m.index,
                        uuid=m.uuid,
                        reason=m.reason[:512],
                        since=m.since,
                        marked_by=m.by,
                    )
                )


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
