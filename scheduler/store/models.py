"""Every table of the scheduler's database, on one ``MetaData``, created in one place.

The database is the source of truth for jobs, events, nodes, reservations, users and the audit
log. Nothing creates these tables from here: the migrations in ``migrations/versions/`` do
(``schema.py``), and ``tests/test_migrations.py`` checks that they and this module agree. A
change here comes with a new revision there.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    """Declarative base of every rota table."""


class JobRow(Base):
    """One job (or one array task). ``spec`` is the validated job file as JSON; an array
    task's row stores ``{}`` there and its spec is its array's (``ArrayRow``), stored once.

    ``ix_jobs_array_task`` finds ``123_4`` (and every task of ``123``) without a scan.
    """

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_state", "state"),
        Index("ix_jobs_array_task", "array_job_id", "array_task_id"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    array_job_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    array_task_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    name: Mapped[str] = mapped_column(String(128))
    user: Mapped[str] = mapped_column(String(64), index=True)
    account: Mapped[str] = mapped_column(String(64))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(512), default="")
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    submit_time: Mapped[float] = mapped_column(Float)
    start_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    end_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    time_limit: Mapped[float] = mapped_column(Float)
    held: Mapped[str] = mapped_column(String(8), default="")  # "", "user", "admin"
    # {node: {"gpus": [indices], "uuids": [...], "cpus": float, "memory": int}} in gang rank order
    allocation: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # the final state a stop was ordered for (COMPLETING -> this), e.g. CANCELLED
    stop_state: Mapped[str] = mapped_column(String(16), default="")
    # the partition it was placed in (migration 0002); NULL: not placed, or placed before
    placed_partition: Mapped[str | None] = mapped_column(String(128), nullable=True)
    # GPU-seconds run by its ended attempts (migration 0007_attained); NULL: none
    attained: Mapped[float | None] = mapped_column(Float, nullable=True)
    # when its attempts were preempted, the latest few (Unix seconds); NULL: never
    preempted_at: Mapped[list[float] | None] = mapped_column(JSON, nullable=True)


class ArrayRow(Base):
    """What the tasks of one array job share, stored once: the validated spec, as JSON.

    ``id`` is the array job id (its first task's row id). Task rows hold only what differs
    per task (task id, state, attempt, times, allocation) and what listings filter on.
    """

    __tablename__ = "arrays"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    tasks: Mapped[int] = mapped_column(Integer)


class JobEventRow(Base):
    """A transition or notable event of a job (time, old, new, why)."""

    __tablename__ = "job_events"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), index=True)
    time: Mapped[float] = mapped_column(Float)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    kind: Mapped[str] = mapped_column(String(16), default="state")
    old_state: Mapped[str] = mapped_column(String(16), default="")
    new_state: Mapped[str] = mapped_column(String(16), default="")
    reason: Mapped[str] = mapped_column(Text, default="")


class SubmitRequestRow(Base):
    """An idempotency key: a retried SubmitJobs with this id returns these job ids."""

    __tablename__ = "submit_requests"

    request_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    user: Mapped[str] = mapped_column(String(64))
    job_ids: Mapped[list[str]] = mapped_column(JSON)


class NodeRow(Base):
    """A registered node: its join token (hashed), labels, admin state and last inventory."""

    __tablename__ = "nodes"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(128), default="")
    labels: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    admin_state: Mapped[str] = mapped_column(String(16), default="")  # "", DRAIN
    reason: Mapped[str] = mapped_column(String(512), default="")
    reason_by: Mapped[str] = mapped_column(String(64), default="")
    reason_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    inventory: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    address: Mapped[str] = mapped_column(String(256), default="")
    last_seen: Mapped[float | None] = mapped_column(Float, nullable=True)


class GpuMarkRow(Base):
    """A GPU taken out of service (unhealthy) and why, so a scheduler restart keeps it."""

    __tablename__ = "gpu_marks"

    node: Mapped[str] = mapped_column(String(128), primary_key=True)
    index: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(128), default="")
    reason: Mapped[str] = mapped_column(String(512), default="")
    since: Mapped[float] = mapped_column(Float)
    marked_by: Mapped[str] = mapped_column(String(64), default="")


class ReservationRow(Base):
    """A reservation: GPUs of nodes booked for users or accounts over a window. ``gpus`` is
    ``{node: [indices]}``; ``flags``, ``users`` and ``accounts`` are lists."""

    __tablename__ = "reservations"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    start: Mapped[float] = mapped_column(Float)
    end: Mapped[float] = mapped_column(Float, index=True)
    gpus: Mapped[dict[str, Any]] = mapped_column(JSON)
    users: Mapped[list[str]] = mapped_column(JSON)
    accounts: Mapped[list[str]] = mapped_column(JSON)
    flags: Mapped[list[str]] = mapped_column(JSON)
    lend: Mapped[bool] = mapped_column(Boolean, default=True)
    created_by: Mapped[str] = mapped_column(String(64), default="")
    created_at: Mapped[float] = mapped_column(Float, default=0.0)
    unused: Mapped[str] = mapped_column(String(16), default="lend")  # the no-show rule's policy
    given_back: Mapped[float] = mapped_column(Float, default=0.0)  # when it gave the window back


class JobUsageRow(Base):
    """What NVML showed of a finished job's GPUs: utilisation samples and peak memory."""

    __tablename__ = "job_usage"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    util_sum: Mapped[float] = mapped_column(Float, default=0.0)  # percent, summed over samples
    samples: Mapped[int] = mapped_column(Integer, default=0)  # one per GPU per heartbeat
    memory_peak: Mapped[int] = mapped_column(BigInteger, default=0)  # bytes, on one GPU
    memory_total: Mapped[int] = mapped_column(BigInteger, default=0)  # that GPU's memory


class NotificationRow(Base):
    """A job-end webhook still to deliver: written in the transaction that ends the job, so a
    notification is never lost to a crash; deleted once delivered or given up."""

    __tablename__ = "notifications"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    url: Mapped[str] = mapped_column(String(2048))
    tries: Mapped[int] = mapped_column(Integer, default=0)
    next_at: Mapped[float] = mapped_column(Float, index=True)  # due; a claim moves it on


class JobWebhookRow(Base):
    """An idle rule's webhook still to deliver (``idle_warning``, ``idle_end``): written in
    the transaction that records the warning or the stop, its JSON body whole; deleted once
    delivered or given up. A job's rows are posted in ``id`` order, before its end webhook."""

    __tablename__ = "job_webhooks"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), index=True)
    event: Mapped[str] = mapped_column(String(32))
    url: Mapped[str] = mapped_column(String(2048))
    body: Mapped[str] = mapped_column(Text)
    tries: Mapped[int] = mapped_column(Integer, default=0)
    next_at: Mapped[float] = mapped_column(Float, index=True)


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


class BookingUsageRow(Base):
    """How one ended reservation window was spent, in GPU-seconds: written when the window
    ends, read by ``gacct --summary`` ("booked but unused", per user who booked it)."""

    __tablename__ = "booking_usage"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    user: Mapped[str] = mapped_column(String(128))  # who booked it
    start: Mapped[float] = mapped_column(Float)
    end: Mapped[float] = mapped_column(Float, index=True)
    booked: Mapped[float] = mapped_column(Float)  # GPUs x the whole window
    used: Mapped[float] = mapped_column(Float)  # by its owners' jobs
    lent: Mapped[float] = mapped_column(Float)  # by borrowers
    released: Mapped[float] = mapped_column(Float)  # after the no-show rule released it


class WebSessionRow(Base):
    """A dashboard login: the SHA-256 of its session id (the cookie; never stored itself),
    its user, the hash of the rota token it logged in with (a token replaced or revoked
    since ends it), when it was made and last used."""

    __tablename__ = "web_sessions"
    __table_args__ = (Index("ix_web_sessions_user", "user", "created"),)

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user: Mapped[str] = mapped_column(String(128))
    token_hash: Mapped[str] = mapped_column(String(128))
    created: Mapped[float] = mapped_column(Float)
    seen: Mapped[float] = mapped_column(Float, index=True)


class MailRow(Base):
    """A job mail still to send (sbatch --mail-type): written in the transaction that records
    the change it tells of; deleted once sent or given up. One per job, attempt and kind."""

    __tablename__ = "mails"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    attempt: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)  # BEGIN END FAIL
    to: Mapped[str] = mapped_column(String(320))
    tries: Mapped[int] = mapped_column(Integer, default=0)
    next_at: Mapped[float] = mapped_column(Float, index=True)


class BookingMailRow(Base):
    """A mail to the owners of a reservation still to send (the no-show rule gave its window
    back): written in the transaction that records the give-back, its text whole (the
    reservation may change or go); deleted once sent or given up."""

    __tablename__ = "booking_mails"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    reservation: Mapped[str] = mapped_column(String(128))
    to: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    tries: Mapped[int] = mapped_column(Integer, default=0)
    next_at: Mapped[float] = mapped_column(Float, index=True)


class PartitionRow(Base):
    """One partition an admin made (``gadmin partition``); those of the settings file are not
    stored. ``settings``: its ``PartitionSettings`` fields as a JSON map."""

    __tablename__ = "partitions"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, default=0)  # creation order
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    changed_by: Mapped[str] = mapped_column(String(128), default="")
    changed: Mapped[float] = mapped_column(Float, default=0.0)


class LeaderRow(Base):
    """The scheduler lease (one row, id 1; ``store/lease.py``): the epoch of the current
    leader, its advertised address, when it last renewed (seconds on the database's clock)
    and whether it holds the leader's advisory lock. Only PostgreSQL deployments with ``ha``
    use it."""

    __tablename__ = "leader"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    epoch: Mapped[int] = mapped_column(BigInteger, default=0)
    holder: Mapped[str] = mapped_column(String(256), default="")
    renewed_at: Mapped[float] = mapped_column(Float, default=0.0)
    locked: Mapped[bool] = mapped_column(Boolean, default=False)


# The mapped classes' tables, typed as the Tables they are (``__table__`` is typed FromClause),
# for the repositories written in SQLAlchemy Core.
JOBS = cast(Table, JobRow.__table__)
EVENTS = cast(Table, JobEventRow.__table__)
ARRAYS = cast(Table, ArrayRow.__table__)
REQUESTS = cast(Table, SubmitRequestRow.__table__)
NODES = cast(Table, NodeRow.__table__)
GPU_MARKS = cast(Table, GpuMarkRow.__table__)
USAGE = cast(Table, JobUsageRow.__table__)
NOTICES = cast(Table, NotificationRow.__table__)
JOB_WEBHOOKS = cast(Table, JobWebhookRow.__table__)
WEB_SESSIONS = cast(Table, WebSessionRow.__table__)
MAILS = cast(Table, MailRow.__table__)
BOOKING_MAILS = cast(Table, BookingMailRow.__table__)
LEADER = cast(Table, LeaderRow.__table__)
