"""The scheduler's in-memory cluster model: active jobs and known nodes.

It mirrors committed database rows (it is rebuilt from them at start-up) and is touched only by
the core thread, so it never disagrees with the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from rota.jobspec import JobSpec
from rota.messages import GpuTelemetry, Inventory, RunningAttempt
from rota.states import JobState

# JobRecord.held of a pending job whose reservation was deleted or ended (ReservationDeleted)
RESERVATION_HOLD = "reservation"
# JobRecord.held of a pending job whose user was revoked (UserRevoked)
REVOKED_HOLD = "revoked"


@dataclass(slots=True)
class NodeAlloc:
    """What one job holds on one node (host GPU indices and their UUIDs); ``port`` is a
    gang's MASTER_PORT, on the allocation of its first node (0 otherwise)."""

    node: str
    gpus: tuple[int, ...]
    uuids: tuple[str, ...] = ()
    cpus: float = 0.0
    memory: int = 0
    port: int = 0


@dataclass(slots=True)
class JobRecord:
    """A job as the scheduler tracks it. ``allocation`` is in gang rank order."""

    id: int
    name: str
    user: str
    account: str
    spec: JobSpec
    state: JobState
    submit_time: float
    time_limit: float
    reason: str = ""
    exit_code: int | None = None
    attempt: int = 0
    start_time: float | None = None
    end_time: float | None = None
    held: str = ""  # "": not held; "user", "admin" or RESERVATION_HOLD: who holds it
    array_job_id: int | None = None
    array_task_id: int | None = None
    allocation: list[NodeAlloc] = field(default_factory=list)
    stop_state: str = ""
    estimated_start: float | None = None  # in copies handed out (pending jobs)
    priority: float | None = None  # in listings that ask for it (pending jobs)
    warning: str = ""  # latest warning of the current attempt (GPU idle, GPU unhealthy)
    partition: str = ""  # the partition it was placed in; "" while pending (spec.partition)
    attained: float = 0.0  # GPU-seconds run by its ended attempts (attained service)
    preempted_at: tuple[float, ...] = ()  # when attempts were preempted, the latest few
    # a gang's ranks of the current attempt that stopped: (node, how it ended); in memory only
    ranks_ended: tuple[tuple[str, JobState], ...] = ()

    @property
    def display_id(self) -> str:
        """``123``, or ``123_4`` for task 4 of array job 123."""
        if self.array_job_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        return str(self.id)

    @property
    def node_names(self) -> list[str]:
        return [a.node for a in self.allocation]


class HistoryKind(StrEnum):
    """What a job event records (stored as its value)."""

    STATE = "state"  # a transition from ``old_state`` to ``new_state``
    WARNING = "warning"  # something the user should see (idle GPUs, an unhealthy GPU, OOMKilled)
    INFO = "info"  # an action on the job that changes no state (held, released, cancel noted)


class AdminState(StrEnum):
    """What an administrator set on a node (stored as its value)."""

    NONE = ""  # takes jobs
    DRAIN = "DRAIN"  # takes no new jobs; running ones finish


@dataclass(frozen=True, slots=True)
class JobEvent:
    """A transition or notable event, as stored and shown by ``gcontrol show job``."""

    job_id: int
    time: float
    attempt: int
    old_state: str
    new_state: str
    reason: str
    kind: HistoryKind = HistoryKind.STATE
    # the JSON body of a webhook this event posts (an idle rule's), queued with the event by
    # ``JobRepository.save`` when the job's ``notify`` wants it; never stored in the history
    webhook: str = field(default="", compare=False)


@dataclass(slots=True)
class NodeState:
    """A node as the scheduler sees it: registration, connection, inventory and telemetry."""

    name: str
    token_hash: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    admin_state: AdminState = AdminState.NONE
    reason: str = ""
    reason_by: str = ""
    reason_time: float | None = None
    inventory: Inventory = field(default_factory=Inventory)
    address: str = ""
    connected: bool = False
    session: int = 0  # id of the live agent stream, 0 when none
    last_heartbeat: float | None = None  # wall clock: shown and stored
    down_since: float | None = None  # wall clock: shown
    # on the scheduler's monotonic clock, never stored or shown: durations of silence are
    # judged on these, so a step of the wall clock makes no node look silent for longer
    heard: float | None = None  # the last message received (while connected)
    grace_from: float | None = None  # node_grace counts from here (while not connected)
    engine_healthy: bool = True
    engine_error: str = ""
    telemetry: tuple[GpuTelemetry, ...] = ()
    telemetry_time: float | None = None  # wall clock: when the telemetry arrived (shown)
    telemetry_heard: float | None = None  # the same on the monotonic clock (is it fresh?)
    attempts: tuple[RunningAttempt, ...] = ()

    @property
    def gpu_count(self) -> int:
        return len(self.inventory.gpus)

    @property
    def schedulable(self) -> bool:
        """Connected, its container engine healthy, and not drained."""
        return self.connected and self.engine_healthy and self.admin_state is AdminState.NONE
