"""The frozen input of a scheduling pass and the plan it returns.

A snapshot holds everything a decision needs, including ``now``; the policy reads nothing else
(no clock, no database). GPU indices are host indices as the node's agent reports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rota.constraint import Constraint, node_features
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.usage import Usage


@dataclass(frozen=True, slots=True)
class GpuView:
    """One GPU of a node. ``allocatable`` is False when unhealthy, dirty or foreign-busy."""

    index: int
    name: str = ""
    memory_total: int = 0
    allocatable: bool = True


@dataclass(frozen=True, slots=True)
class NodeView:
    """A registered node. ``schedulable`` is False when down, draining or drained.

    ``links`` is the GPU topology when known: ``(a, b) -> level`` for host indices ``a < b``,
    levels as in ``nvidia-smi topo -m`` (see ``topology.LEVELS``; lower is closer). Empty when
    unknown: GPUs are then picked by index. ``partitions``: the names of the partitions the
    node belongs to (``partitions.PartitionTable.of_node``). ``features``: the feature names
    its labels give it (``constraint.node_features``), worked out once, as a pass checks
    every pending job's constraint against every node.
    """

    name: str
    gpus: tuple[GpuView, ...]
    cpus: float = 0.0
    memory: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)
    schedulable: bool = True
    links: Mapping[tuple[int, int], str] = field(default_factory=dict)
    partitions: frozenset[str] = frozenset()
    features: frozenset[str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", node_features(self.labels))


@dataclass(frozen=True, slots=True)
class Allocation:
    """What one job holds on one node."""

    node: str
    gpu_indices: tuple[int, ...]
    cpus: float = 0.0
    memory: int = 0


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job holding resources (CONFIGURING, RUNNING or COMPLETING).

    ``stopping`` is True once a stop was ordered (COMPLETING, or preempted and not yet gone):
    its resources count as released now. ``true_duration`` (run time of this attempt) is set
    only by the simulator, for the ``sjf-oracle`` policy; production leaves it None.
    ``checkpointable``: the job survives a restart (attained-service preemption may stop it);
    ``attained``: GPU-seconds of its earlier attempts (this one's accrue from ``start_time``);
    ``preempted_at``: when its earlier attempts were preempted (the hourly budget);
    ``submit_time``: when it was submitted (the starvation guard); ``partition``: the one it
    was placed in (its ``min_runtime``).
    """

    id: int
    user: str
    account: str
    allocations: tuple[Allocation, ...]
    start_time: float
    time_limit: float
    priority: int = 0
    preemptible: bool = False
    qos: str = ""
    exclusive: bool = False
    array_job_id: int | None = None
    stopping: bool = False
    true_duration: float | None = None
    reservation: str = ""
    checkpointable: bool = False
    attained: float = 0.0
    preempted_at: tuple[float, ...] = ()
    submit_time: float = 0.0
    partition: str = ""
    interactive: bool = False  # a grun session: preempted only off lent reserved GPUs

    @property
    def gpu_count(self) -> int:
        """GPUs held over every node."""
        return sum(len(a.gpu_indices) for a in self.allocations)


@dataclass(frozen=True, slots=True)
class PendingJob:
    """A job waiting to run. ``gpus``, ``cpus`` and ``memory`` are per node.

    ``blocked`` is a reason the service already knows (held, dependency, begin time), or None
    when the job is eligible as far as the service can tell; the policy passes it through.
    ``time_limit`` <= 0 means "use ``PolicyConfig.default_time_limit``"; ``default_limit`` is
    True when the user gave none and the service filled in the default (the policy then trusts
    history more than the limit). Array tasks carry ``array_job_id`` and the ``%`` limit in
    ``array_task_limit`` (0: none). ``true_duration`` is set only by the simulator, for the
    ``sjf-oracle`` policy; production leaves it None. ``reservation`` is the reservation the
    job names ("" for none). ``partitions``: it runs only on nodes of one of these (empty:
    anywhere); ``priority_tier`` is the lowest tier among them (adds
    ``weights.partition_tier`` per tier to its priority). ``checkpointable``: it survives a
    restart; ``attained``: GPU-seconds of its earlier attempts (kept across requeues).
    """

    id: int
    user: str
    account: str
    submit_time: float
    time_limit: float
    gpus: int = 0
    nodes: int = 1
    cpus: float = 0.0
    memory: int = 0
    gpu_type: str = ""
    gpu_memory: int = 0
    node_selector: Mapping[str, str] = field(default_factory=dict)
    exclusive: bool = False
    priority: int = 0
    qos: str = ""
    preemptible: bool = False
    blocked: str | None = None
    default_limit: bool = False
    array_job_id: int | None = None
    array_task_limit: int = 0
    true_duration: float | None = None
    reservation: str = ""
    partitions: tuple[str, ...] = ()
    priority_tier: int = 0
    checkpointable: bool = False
    attained: float = 0.0
    nodelist: frozenset[str] = frozenset()  # only these nodes (empty: any); sbatch -w
    exclude: frozenset[str] = frozenset()  # never these nodes; sbatch -x
    constraint: Constraint | None = None  # node features (sbatch -C); None: any node
    interactive: bool = False  # a grun session: may borrow lent reserved GPUs (preemptible there)


@dataclass(frozen=True, slots=True)
class ReservationView:
    """A reservation the pass must honour: GPUs of nodes booked over ``[start, end)``.

    ``gpus`` maps node name -> reserved host GPU indices. Jobs naming the reservation whose
    user is in ``users`` or account in ``accounts`` may run on those GPUs during the window.
    ``maint``: nobody else runs there and nothing is lent; ``lend``: idle GPUs may run
    preemptible jobs of anyone while the window is open; ``flex``: its jobs may also start
    before the window and on other GPUs, and are not ended at the window's end.
    ``unused``/``given_back``: the no-show rule (``ReservationCalendar.no_shows``). ``period``
    > 0: the window recurs every ``period`` seconds (``windows``); ``start``/``end`` are the
    current or next one (``calendar.ReservationCalendar`` moves an ended one on).
    """

    name: str
    start: float
    end: float
    gpus: Mapping[str, tuple[int, ...]]
    users: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()
    maint: bool = False
    lend: bool = True
    flex: bool = False
    period: float = 0.0
    unused: str = "lend"  # the no-show rule's policy: "lend" or "release"
    given_back: float = 0.0  # when the no-show rule gave this window back (0: not)
    created_at: float = 0.0  # when it was booked (the no-show rule's grace starts no earlier)

    @property
    def lent_to_all(self) -> bool:
        """Whether the no-show rule lent this window's GPUs to the whole queue."""
        return self.unused == "lend" and self.given_back > 0 and self.start <= self.given_back

    @property
    def released(self) -> bool:
        """Whether the no-show rule released this window."""
        return self.unused == "release" and self.given_back > 0 and self.start <= self.given_back

    def active(self, now: float) -> bool:
        """Whether the window is open at ``now``."""
        return self.start <= now < self.end

    def allows(self, user: str, account: str) -> bool:
        """Whether a job of ``user`` / ``account`` may use the reservation."""
        return user in self.users or account in self.accounts

    def cells(self) -> frozenset[tuple[str, int]]:
        """Every reserved (node, GPU index)."""
        return frozenset((node, g) for node, idx in self.gpus.items() for g in idx)

    def windows(self, start: float, end: float) -> list[tuple[float, float]]:
        """The windows (this one and, if it recurs, the later ones) that meet
        ``[start, end)``, earliest first."""
        return recurring_windows(self.start, self.end, self.period, start, end)


def recurring_windows(
    first: float, last: float, period: float, start: float, end: float
) -> list[tuple[float, float]]:
    """The windows ``[first, last)`` + k x ``period`` (k >= 0; only k = 0 when ``period`` is 0)
    that meet ``[start, end)``, earliest first."""
    if not period:
        return [(first, last)] if start < last and first < end else []
    out = []
    k = max(0, int((start - last) // period))
    while first + k * period < end:
        if start < last + k * period:
            out.append((first + k * period, last + k * period))
        k += 1
    return out


@dataclass(frozen=True, slots=True)
class PendingDelta:
    """How ``Snapshot.pending`` differs from that of the snapshot whose ``version`` is ``base``.

    Optional: the pending jobs of this snapshot are those of snapshot ``base`` without the ids
    in ``removed``, plus ``added`` (a changed job is removed and added). A producer that keeps
    it right lets policies update their cached queue order in O(change); policies check the
    counts and otherwise find the change themselves.
    """

    base: int
    removed: tuple[int, ...] = ()
    added: tuple[PendingJob, ...] = ()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one pass sees; ``version`` increases with every change to the model.

    ``usage`` is the decayed consumption and run-time history per account and user (see
    ``usage.UsageLedger``; the daemon republishes it every ``config.priority_period``);
    ``config`` holds weights, limits and backfill depth. ``full_reasons`` False lets a policy
    stop examining jobs once nothing more can start (the simulator, which reads no reasons);
    reasons and estimates then cover only the jobs examined. ``delta`` (optional) tells how
    ``pending`` changed since an earlier snapshot (see ``PendingDelta``). ``reservations``
    are the reservations whose window is open or ahead (``reserve.ReservationGate``);
    ``names_reservation`` says whether some pending job names a reservation (None: unknown, the
    policy looks). The scheduler leaves ``nodes`` empty when ``pending`` is: nothing to place.
    """

    now: float
    nodes: tuple[NodeView, ...]
    pending: tuple[PendingJob, ...]
    running: tuple[RunningJob, ...]
    version: int = 0
    usage: Usage = field(default_factory=Usage)
    config: PolicyConfig = field(default_factory=PolicyConfig)
    full_reasons: bool = True
    delta: PendingDelta | None = None
    reservations: tuple[ReservationView, ...] = ()
    names_reservation: bool | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    """Start ``job_id`` with these allocations (one per node of a gang). ``deadline`` > 0:
    the job must end by then (its reservation window's end), whatever its time limit; the
    policy computes it once, the daemon and the simulator only apply it."""

    job_id: int
    allocations: tuple[Allocation, ...]
    deadline: float = 0.0


@dataclass(frozen=True, slots=True)
class Plan:
    """The decisions of one pass.

    ``reasons`` maps every pending job that is not placed to a reason constant;
    ``est_start`` maps pending jobs to an estimated start time where one is computable.
    ``preempted_why`` maps each preempted job to why, in words (its event's text).
    """

    placements: tuple[Placement, ...] = ()
    preemptions: tuple[int, ...] = ()
    reasons: Mapping[int, str] = field(default_factory=dict)
    est_start: Mapping[int, float] = field(default_factory=dict)
    preempted_why: Mapping[int, str] = field(default_factory=dict)
