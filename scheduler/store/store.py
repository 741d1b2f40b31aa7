"""The storage interface: every database read and write of the scheduler goes through ``Store``.

Any SQLAlchemy URL works; SQLite (the embedded default) runs in WAL mode. Each public method is
one transaction. The store is used from one thread at a time (the scheduler's core thread).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import and_, create_engine, delete, event, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from rota.gpus import GpuInfo, GpuLink
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
    Base,
    GpuMarkRow,
    JobEventRow,
    JobRow,
    JobUsageRow,
    NodeRow,
    SubmitRequestRow,
)
from rota.states import TERMINAL_STATES, JobState

_TERMINAL = [s.value for s in TERMINAL_STATES]


def spec_to_json(spec: JobSpec) -> dict[str, Any]:
    """A JSON-safe dict of a JobSpec."""
    data = dataclasses.asdict(spec)
    data["command"] = list(spec.command)
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


def _record(row: JobRow) -> JobRecord:
    return JobRecord(
        id=row.id,
        name=row.name,
        user=row.user,
        account=row.account,
        spec=spec_from_json(row.spec),
        state=JobState(row.state),
        submit_time=row.submit_time,
        time_limit=row.time_limit,
        reason=row.reason,
        exit_code=row.exit_code,
        attempt=row.attempt,
        start_time=row.start_time,
        end_time=row.end_time,
        held=row.held,
        array_job_id=row.array_job_id,
        array_task_id=row.array_task_id,
        allocation=_alloc_from_json(row.allocation),
        stop_state=row.stop_state,
    )


def _copy_to_row(job: JobRecord, row: JobRow) -> None:
    row.state = job.state.value
    row.reason = job.reason[:512]
    row.exit_code = job.exit_code
    row.attempt = job.attempt
    row.start_time = job.start_time
    row.end_time = job.end_time
    row.held = job.held
    row.allocation = _alloc_to_json(job.allocation)
    row.stop_state = job.stop_state
    row.time_limit = job.time_limit


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


@dataclasses.dataclass(frozen=True)
class JobQuery:
    """Filters of a job listing; empty filters match everything."""

    states: tuple[JobState, ...] = ()
    ids: tuple[int, ...] = ()  # job row ids
    array_ids: tuple[int, ...] = ()  # all tasks of these array jobs
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    after_id: int = 0
    limit: int = 0


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
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def close(self) -> None:
        self.engine.dispose()

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
        out: list[list[JobRecord]] = []
        with self._session() as session, session.begin():
            for group, request_id in zip(jobs, request_ids, strict=True):
                stored: list[JobRecord] = []
                array_id: int | None = None
                for job in group:
                    row = JobRow(
                        name=job.name,
                        user=job.user,
                        account=job.account,
                        spec=spec_to_json(job.spec),
                        state=job.state.value,
                        reason=job.reason,
                        attempt=0,
                        submit_time=job.submit_time,
                        time_limit=job.time_limit,
                        held=job.held,
                        array_task_id=job.array_task_id,
                    )
                    session.add(row)
                    session.flush()
                    if job.array_task_id is not None:
                        array_id = array_id if array_id is not None else row.id
                        row.array_job_id = array_id
                    job = dataclasses.replace(job, id=row.id, array_job_id=row.array_job_id)
                    session.add(
                        JobEventRow(
                            job_id=row.id,
                            time=job.submit_time,
                            attempt=0,
                            old_state="",
                            new_state=job.state.value,
                            reason=f"submitted by {user}",
                        )
                    )
                    stored.append(job)
                if request_id:
                    session.add(
                        SubmitRequestRow(
                            request_id=request_id, user=user, job_ids=[j.display_id for j in stored]
                        )
                    )
                out.append(stored)
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
        """Write the mutable fields of these jobs and append events, in one transaction."""
        jobs = list(jobs)
        with self._session() as session, session.begin():
            if jobs:
                rows = {
                    r.id: r
                    for r in session.scalars(
                        select(JobRow).where(JobRow.id.in_([j.id for j in jobs]))
                    )
                }
                for job in jobs:
                    _copy_to_row(job, rows[job.id])
            for ev in events:
                session.add(
                    JobEventRow(
                        job_id=ev.job_id,
                        time=ev.time,
                        attempt=ev.attempt,
                        kind=ev.kind.value,
                        old_state=ev.old_state,
                        new_state=ev.new_state,
                        reason=ev.reason,
                    )
                )

    def active_jobs(self) -> list[JobRecord]:
        """Every job that is not in a terminal state, in id order."""
        with self._session() as session:
            rows = session.scalars(
                select(JobRow).where(JobRow.state.not_in(_TERMINAL)).order_by(JobRow.id)
            )
            return [_record(r) for r in rows]

    def ended_jobs(self, since: float) -> list[JobRecord]:
        """Jobs in a terminal state that started and ended at or after ``since``, in end-time
        order (fair share is rebuilt from them at start-up)."""
        with self._session() as session:
            rows = session.scalars(
                select(JobRow)
                .where(
                    JobRow.state.in_(_TERMINAL),
                    JobRow.start_time.is_not(None),
                    JobRow.end_time >= since,
                )
                .order_by(JobRow.end_time, JobRow.id)
            )
            return [_record(r) for r in rows]

    def query_jobs(self, query: JobQuery) -> list[JobRecord]:
        """Jobs matching ``query`` in id order."""
        stmt = select(JobRow).order_by(JobRow.id)
        if query.states:
            stmt = stmt.where(JobRow.state.in_([s.value for s in query.states]))
        if query.ids or query.array_ids:
            stmt = stmt.where(
                or_(JobRow.id.in_(query.ids), JobRow.array_job_id.in_(query.array_ids))
            )
        if query.users:
            stmt = stmt.where(JobRow.user.in_(query.users))
        if query.accounts:
            stmt = stmt.where(JobRow.account.in_(query.accounts))
        if query.after_id:
            stmt = stmt.where(JobRow.id > query.after_id)
        if query.limit:
            stmt = stmt.limit(query.limit)
        with self._session() as session:
            return [_record(r) for r in session.scalars(stmt)]

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
                out.setdefault(array_id, []).append(row_id)
        return out

    def events(self, job_id: int) -> list[JobEvent]:
        """The event history of one job, oldest first."""
        with self._session() as session:
            rows = session.scalars(
                select(JobEventRow).where(JobEventRow.job_id == job_id).order_by(JobEventRow.id)
            )
            return [
                JobEvent(
                    r.job_id,
                    r.time,
                    r.attempt,
                    r.old_state,
                    r.new_state,
                    r.reason,
                    HistoryKind(r.kind),
                )
                for r in rows
            ]

    # -------------------------------------------------------------- accounting

    def save_usage(self, usages: Iterable[JobUsage]) -> None:
        """Insert or replace the NVML figures of these jobs, in one transaction."""
        with self._session() as session, session.begin():
            for u in usages:
                session.merge(
                    JobUsageRow(
                        job_id=u.job_id,
                        util_sum=u.util_sum,
                        samples=u.samples,
                        memory_peak=u.memory_peak,
                        memory_total=u.memory_total,
                    )
                )

    def finished_jobs(self, query: AccountingQuery) -> list[FinishedJob]:
        """Jobs in a terminal state matching ``query``, most recent end first, each with its
        NVML figures (zero samples when none were recorded)."""
        stmt = (
            select(JobRow, JobUsageRow)
            .outerjoin(JobUsageRow, JobUsageRow.job_id == JobRow.id)
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
        with self._session() as session:
            return [
                FinishedJob(
                    _record(job),
                    JobUsage(job.id)
                    if usage is None
                    else JobUsage(
                        job.id, usage.util_sum, usage.samples, usage.memory_peak, usage.memory_total
                    ),
                )
                for job, usage in session.execute(stmt)
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
                session.execute(delete(JobEventRow).where(JobEventRow.job_id.in_(chunk)))
                session.execute(delete(JobRow).where(JobRow.id.in_(chunk)))
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
        """Insert or update a node's durable fields."""
        with self._session() as session, session.begin():
            row = session.get(NodeRow, node.name) or NodeRow(name=node.name)
            row.token_hash = node.token_hash
            row.labels = dict(node.labels)
            row.admin_state = node.admin_state.value
            row.reason = node.reason
            row.reason_by = node.reason_by
            row.reason_time = node.reason_time
            row.inventory = inventory_to_json(node.inventory)
            row.address = node.address
            row.last_seen = node.last_heartbeat
            session.add(row)

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
