"""What the core asks of storage: one repository protocol per aggregate, and the value types
they take and give. The core types against these; ``rota.scheduler.store.store.Store`` builds
the SQLAlchemy implementations (``jobs``, ``nodes``, ``usage``, ``notices``, ``users``,
``reservations``, ``web_sessions``), and a test may pass any object with the same methods.

Every method is one transaction: when it returns, what it wrote is committed; when it raises,
nothing of it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from rota.scheduler.cluster.accounting import AccountingQuery, FinishedJob, JobUsage
from rota.scheduler.cluster.gpus import GpuMark
from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeState
from rota.scheduler.cluster.reservation import Reservation
from rota.scheduler.cluster.users import AuditEntry, UserRecord
from rota.states import JobState


@dataclasses.dataclass(frozen=True)
class JobQuery:
    """Filters of a job listing; empty filters match everything."""

    states: tuple[JobState, ...] = ()
    ids: tuple[int, ...] = ()  # job row ids
    array_ids: tuple[int, ...] = ()  # all tasks of these array jobs
    task_ids: tuple[int, ...] = ()  # with array_ids: only these task ids of those arrays
    # display ids, parsed: (123, None) is job 123 (a job, or an array task by its own integer
    # id, its SLURM_JOB_ID) and every task of array 123; (123, 4) is 123_4
    named: tuple[tuple[int, int | None], ...] = ()
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    after_id: int = 0
    limit: int = 0
    private_to: str = ""  # a user: other users' ended jobs are left out (gacct's PrivateData)

    def matcher(self) -> Callable[[JobRecord], bool]:
        """The filters other than ids, array ids, ``after_id`` and ``limit``, in memory (the
        same rules ``JobRepository.query`` applies in SQL)."""
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
                    or job.id in plain
                    or job.array_job_id in plain
                    or (job.array_job_id, job.array_task_id) in pairs
                )
            )

        return match


class DuplicateRequest(Exception):
    """A client request id was stored by another writer between the check and the insert."""


@dataclasses.dataclass(frozen=True, slots=True)
class Notice:
    """A webhook due: its job, where to post, how many tries failed so far; an idle rule's
    (``webhook_id`` > 0) also its ``event`` and its JSON ``body`` as queued."""

    job: JobRecord
    url: str
    tries: int
    webhook_id: int = 0
    event: str = ""
    body: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class StoredSession:
    """A dashboard login as stored: hashes of its session id and of its rota token."""

    id_hash: str
    user: str
    token_hash: str
    created: float
    seen: float


@dataclasses.dataclass(frozen=True, slots=True)
class SessionLimits:
    """What ``WebSessionRepository.open`` keeps: sessions used at or after ``seen_after`` and
    made at or after ``created_after``; at most ``per_user`` of one user, ``total`` in all."""

    seen_after: float
    created_after: float
    per_user: int
    total: int


class JobRepository(Protocol):
    """Jobs, array specs, job events and submission request ids."""

    def submit(
        self, jobs: Sequence[Sequence[JobRecord]], request_ids: Sequence[str], user: str
    ) -> list[list[JobRecord]]:
        """Insert each group (one job, or an array's tasks) with ids assigned and request ids
        recorded; a request id stored concurrently raises DuplicateRequest."""
        ...

    def known_requests(self, request_ids: Iterable[str]) -> dict[str, list[str]]:
        """Display ids already stored for these request ids."""
        ...

    def save(self, jobs: Iterable[JobRecord], events: Iterable[JobEvent] = ()) -> None:
        """Write the mutable fields of these jobs and append events (and queue the webhook of
        a job saved as ended that wants one, and those events carry that its ``notify``
        wants)."""
        ...

    def write_reasons(self, reasons: Sequence[tuple[int, str]]) -> None:
        """Store why pending jobs wait, later and off the caller's thread."""
        ...

    def active(self) -> list[JobRecord]:
        """Every job not in a terminal state, in id order."""
        ...

    def ended(self, since: float) -> list[JobRecord]:
        """Jobs that started and ended at or after ``since``, in end-time order."""
        ...

    def query(self, query: JobQuery) -> list[JobRecord]:
        """Jobs matching ``query`` in id order."""
        ...

    def events(self, job_id: int) -> list[JobEvent]:
        """The event history of one job, oldest first."""
        ...


class NoticeRepository(Protocol):
    """Webhooks still to deliver (queued by ``JobRepository.save``): a job's end
    (``webhook_id`` 0) and its idle rules' (``webhook_id`` > 0)."""

    def claim(self, now: float, lease: float, limit: int) -> list[Notice]:
        """Up to ``limit`` webhooks due at ``now``, each leased for ``lease`` seconds; at
        most one per job, the first it queued (a job's end webhook after its idle ones)."""
        ...

    def done(self, job_id: int, event: JobEvent, webhook_id: int = 0) -> None:
        """Forget a delivered (or given up) webhook and record ``event``."""
        ...

    def retry(
        self, job_id: int, tries: int, next_at: float, event: JobEvent, webhook_id: int = 0
    ) -> None:
        """Try a failed webhook again at ``next_at`` and record ``event``."""
        ...


MailKey = tuple[int, int, str]  # (job id, attempt, kind)


@dataclasses.dataclass(frozen=True, slots=True)
class StoredMail:
    """A job mail due: the job, the attempt and kind (BEGIN END FAIL) it tells of, where it
    goes ("" = the job's user), how many tries failed so far."""

    job: JobRecord
    attempt: int
    kind: str
    to: str
    tries: int

    @property
    def key(self) -> MailKey:
        return (self.job.id, self.attempt, self.kind)


class MailRepository(Protocol):
    """Job mails still to send."""

    def claim(self, now: float, lease: float, limit: int) -> list[StoredMail]:
        """Up to ``limit`` mails due at ``now``, each not due again for ``lease`` seconds."""
        ...

    def done(self, key: MailKey, event: JobEvent) -> None: ...

    def retry(self, key: MailKey, tries: int, next_at: float, event: JobEvent) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class BookingMail:
    """A mail to one owner of a reservation, its text whole; ``id`` and ``tries`` are the
    store's (0 until queued)."""

    reservation: str
    to: str
    subject: str
    body: str
    id: int = 0
    tries: int = 0


class BookingMailRepository(Protocol):
    """Mails to reservations' owners still to send (queued by ``ReservationRepository.save``)."""

    def claim(self, now: float, lease: float, limit: int) -> list[BookingMail]:
        """Up to ``limit`` mails due at ``now``, each not due again for ``lease`` seconds."""
        ...

    def done(self, id: int) -> None: ...

    def retry(self, id: int, tries: int, next_at: float) -> None: ...


class NodeRepository(Protocol):
    """Registered nodes and the GPUs taken out of service on them."""

    def all(self) -> list[NodeState]:
        """Every registered node, by name (connection fields at their defaults)."""
        ...

    def save(self, node: NodeState) -> None:
        """Insert or update a node's durable fields."""
        ...

    def delete(self, name: str) -> None: ...

    def gpu_marks(self) -> dict[str, list[GpuMark]]:
        """Every GPU taken out of service, per node name."""
        ...

    def save_gpu_marks(self, node: str, marks: Iterable[GpuMark]) -> None:
        """Replace the stored marks of one node with ``marks``."""
        ...


class UsageRepository(Protocol):
    """NVML figures of jobs, finished jobs for accounting, and their retention."""

    def save(self, usages: Iterable[JobUsage]) -> None:
        """Insert or replace the figures of these jobs."""
        ...

    def finished(self, query: AccountingQuery) -> list[FinishedJob]:
        """Ended jobs matching ``query``, most recent end first, with their figures."""
        ...

    def purge_ended(self, before: float) -> int:
        """Forget jobs that ended before ``before`` (events, figures, webhooks too)."""
        ...


class UserRepository(Protocol):
    """Users and the audit log."""

    def users(self) -> list[UserRecord]: ...

    def user(self, name: str) -> UserRecord | None: ...

    def by_token_hash(self, token_hash: str) -> UserRecord | None:
        """The user whose current token hashes to ``token_hash`` (revoked or not)."""
        ...

    def save(self, user: UserRecord) -> None:
        """Insert or replace ``user``."""
        ...

    def record(self, entry: AuditEntry) -> None: ...

    def prune_audit(self, before: float) -> int:
        """Delete entries dated before ``before``; returns how many."""
        ...

    def audit(self, since: float = 0.0, limit: int = 1000) -> list[AuditEntry]:
        """Entries at or after ``since``, oldest first; the newest ``limit`` of them."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class WindowUsage:
    """How one reservation window booked by ``user`` was spent, in GPU-seconds."""

    name: str
    user: str
    start: float
    end: float
    booked: float  # GPUs x the whole window
    used: float  # by its owners' jobs
    lent: float  # by borrowers
    released: float  # after the no-show rule released it

    @property
    def unused(self) -> float:
        """Booked but not used by its owners (lent, idle or released)."""
        return max(0.0, self.booked - self.used)


class ReservationRepository(Protocol):
    """Reservations, and how their ended windows were spent."""

    def current(self, now: float) -> list[Reservation]:
        """Every reservation whose window has not ended at ``now``, earliest first."""
        ...

    def exists(self, name: str) -> bool: ...

    def save(self, r: Reservation, mails: Sequence[BookingMail] = (), at: float = 0.0) -> None:
        """Insert or replace ``r``; in the same transaction queue ``mails``, due at ``at``."""
        ...

    def delete(self, name: str) -> None: ...

    def record_usage(self, windows: Sequence[WindowUsage]) -> None:
        """Store how these ended windows were spent."""
        ...

    def booked_unused(self, start: float, end: float) -> dict[str, float]:
        """GPU-seconds booked but not used by their owners, per user who booked, of the
        windows that ended in ``[start, end]`` (0: unbounded)."""
        ...


class WebSessionRepository(Protocol):
    """Dashboard logins (``rota.scheduler.web.sessions`` keeps them in memory too)."""

    def open(self, session: StoredSession, limits: SessionLimits) -> list[str] | None:
        """Store ``session`` within ``limits``, ending expired sessions and the user's oldest;
        the id hashes it ended, or None (nothing stored) when others hold every session."""
        ...

    def find(self, id_hash: str) -> StoredSession | None: ...

    def touch(self, id_hash: str, seen: float) -> None:
        """Record that the session was used at ``seen``."""
        ...

    def close(self, id_hash: str) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class StoredPartition:
    """A partition an admin made: its settings' fields (``PartitionSettings``, as JSON values),
    its place in creation order, who changed it last and when."""

    name: str
    settings: dict[str, object]
    position: int
    changed_by: str
    changed: float


class PartitionRepository(Protocol):
    """Partitions admins made (``gadmin partition``)."""

    def all(self) -> list[StoredPartition]:
        """Every stored partition in creation order."""
        ...

    def save(self, partition: StoredPartition) -> None:
        """Insert or replace ``partition``."""
        ...

    def delete(self, name: str) -> None: ...
