"""Policy configuration: priority weights, limits, backfill depth (frozen; lives in the snapshot)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

HOUR = 3600.0
DAY = 24 * HOUR


@dataclass(frozen=True, slots=True)
class Weights:
    """Weights of the multifactor priority; each factor is in [0, 1] (see ``priority.py``).

    ``job_priority`` multiplies the job's own integer ``priority`` (admin nice value) unscaled;
    ``partition_tier`` its partitions' ``priority_tier`` (large: a higher tier goes first).
    """

    age: float = 1000.0
    fairshare_account: float = 2000.0
    fairshare_user: float = 500.0
    qos: float = 4000.0
    size: float = 0.0
    service: float = 4000.0
    job_priority: float = 1.0
    partition_tier: float = 100_000.0  # per priority tier of the job's partitions


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-user and per-account limits; None means unlimited.

    ``max_gpus_*`` bound GPUs held by running jobs (placements of this pass included);
    ``max_pending_*`` bound how many pending jobs are eligible at once (the oldest ones).
    """

    max_gpus_per_user: int | None = None
    max_gpus_per_account: int | None = None
    max_pending_per_user: int | None = None
    max_pending_per_account: int | None = None


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """Everything tunable about a pass.

    - ``max_age``: waiting time at which the age factor saturates at 1.
    - ``priority_period``: priorities are computed with ``now`` rounded down to this period
      (SLURM's PriorityCalcPeriod), which lets a pass reuse the previous pass's ordering.
    - ``usage_half_life``: half-life of decayed usage (used by ``usage.UsageLedger``).
    - ``account_shares``: relative shares per account; accounts not named get ``default_share``.
    - ``qos_levels``: QoS name -> level in [0, 1]; unknown names get ``qos_levels[""]`` or 0.
      The level also ranks preemption: a job may preempt only preemptible jobs of lower level
      (then lower job ``priority``).
    - ``default_time_limit``: for jobs whose ``time_limit`` <= 0.
    - ``backfill_depth``: the first K blocked jobs in priority order get a reservation
      (conservative backfill); a lower-priority job starts only if it delays none of them.
    - ``backfill_max_job_test``: test at most this many eligible jobs per pass, in order (SLURM's
      ``bf_max_job_test``, default 500 there); later jobs wait with ``Priority`` untested. 0 (the
      default): no cap. A cap bounds a pass on huge queues but leaves idle GPUs that a job
      beyond it could use, so it is off unless configured.
    - ``preemption``: allow preempting preemptible jobs for blocked higher-class jobs.
    - ``attained_thresholds``: GPU-seconds of attained service that split checkpointable jobs
      into queues (Tiresias' discretised LAS): queue 0 below the first, 1 below the second...
      Empty: no attained-service queues and no preemption by them (``attained.py``).
    - ``starvation_factor``: a checkpointable job that has waited this many times as long as it
      has run goes back to queue 0 (0: never).
    - ``min_runtime``: seconds an attempt runs before attained service may preempt it;
      ``min_runtime_qos`` and ``min_runtime_partition`` set it per QoS name and per partition
      (the job's placed partition); where both apply, the longer one.
    - ``max_preemptions_per_hour``: attained service preempts a job at most this often in any
      hour (0: no budget).
    """

    weights: Weights = field(default_factory=Weights)
    limits: Limits = field(default_factory=Limits)
    max_age: float = 7 * DAY
    priority_period: float = 300.0
    usage_half_life: float = 7 * DAY
    account_shares: Mapping[str, float] = field(default_factory=dict)
    default_share: float = 1.0
    qos_levels: Mapping[str, float] = field(
        default_factory=lambda: {"low": 0.0, "": 0.5, "normal": 0.5, "high": 1.0}
    )
    default_time_limit: float = 7 * DAY
    backfill_depth: int = 16
    backfill_max_job_test: int = 0
    preemption: bool = True
    attained_thresholds: tuple[float, ...] = (HOUR, 10 * HOUR)
    starvation_factor: float = 10.0
    min_runtime: float = 900.0
    min_runtime_qos: Mapping[str, float] = field(default_factory=dict)
    min_runtime_partition: Mapping[str, float] = field(default_factory=dict)
    max_preemptions_per_hour: int = 2

    def qos_level(self, qos: str) -> float:
        """The configured level of a QoS name (unknown names: level of ``""``)."""
        return self.qos_levels.get(qos, self.qos_levels.get("", 0.0))

    def min_runtime_of(self, qos: str, partition: str = "") -> float:
        """Seconds a job of ``qos`` placed in ``partition`` runs before attained service may
        preempt it."""
        own = [
            v
            for v in (self.min_runtime_qos.get(qos), self.min_runtime_partition.get(partition))
            if v is not None
        ]
        return max(own) if own else self.min_runtime

    def limit_of(self, time_limit: float) -> float:
        """A job's time limit, the default when it has none."""
        return time_limit if time_limit > 0 else self.default_time_limit
