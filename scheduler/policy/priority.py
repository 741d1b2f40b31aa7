"""Multifactor priority: age, fair share (account and user), QoS, size, expected service.

Every factor is in [0, 1]; the priority is the weighted sum (``config.Weights``) plus
``weights.job_priority * job.priority`` plus ``weights.partition_tier * job.priority_tier``
(the lowest tier of its partitions). Factors:

- ``age``: waiting time / ``max_age``, capped at 1; time is ``now`` rounded down to
  ``priority_period``.
- ``fairshare_account``, ``fairshare_user``: ``2 ** -(usage share / entitled share)`` (SLURM's
  classic formula) from decayed usage; accounts with recorded usage are entitled to their
  ``account_shares``, users with recorded usage equally; no usage yet gives 1.
- ``qos``: the QoS level from config.
- ``size``: 1 - the job's GPUs / the cluster's GPUs (favours small jobs).
- ``service``: expected GPU-time on a log scale, 1 for nothing, 0 for ``MAX_SERVICE``. The
  expected run time is the user's limit times that user's past (run time / limit) ratio, or,
  for jobs that got the default limit, the typical run time of the user's (else the
  account's) earlier jobs; never more than the limit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from rota.scheduler.policy.config import DAY, PolicyConfig
from rota.scheduler.policy.snapshot import PendingJob, Snapshot
from rota.scheduler.policy.usage import Usage

MAX_SERVICE = 30 * DAY * 128  # GPU-seconds at which the service factor reaches 0
UNKNOWN_LIMIT_RATIO = 0.5  # assumed run time / limit for a user without history
_LOG_MAX_SERVICE = math.log1p(MAX_SERVICE / 60.0)

FACTORS = ("age", "fairshare_account", "fairshare_user", "qos", "size", "service")


@dataclass(frozen=True, slots=True)
class Factor:
    """One priority factor: its value in [0, 1], weight, and weighted contribution."""

    name: str
    value: float
    weight: float

    @property
    def contribution(self) -> float:
        return self.value * self.weight


class PriorityContext:
    """What priorities of one pass share: rounded time, fair-share factors, cluster size.

    A job's priority depends only on the job, ``config`` and ``key``, so passes with equal
    keys and configs may reuse each other's priorities.
    """

    def __init__(self, snapshot: Snapshot) -> None:
        cfg = snapshot.config
        self.config = cfg
        self.usage = snapshot.usage
        period = cfg.priority_period
        self.now = math.floor(snapshot.now / period) * period if period > 0 else snapshot.now
        self.cluster_gpus = max(1, sum(len(n.gpus) for n in snapshot.nodes))
        accounts = snapshot.usage.account
        self.account_fs = _fairshare(
            accounts, {a: cfg.account_shares.get(a, cfg.default_share) for a in accounts}
        )
        self.user_fs = _fairshare(snapshot.usage.user, dict.fromkeys(snapshot.usage.user, 1.0))
        self.key = (self.now, snapshot.usage.as_of, snapshot.usage.version, self.cluster_gpus)

    def factors(self, job: PendingJob) -> tuple[Factor, ...]:
        """The factors of ``job`` (for ``explain``)."""
        w = self.config.weights
        values = self._values(job)
        weights = (w.age, w.fairshare_account, w.fairshare_user, w.qos, w.size, w.service)
        return tuple(Factor(n, v, wt) for n, v, wt in zip(FACTORS, values, weights, strict=True))

    def priority(self, job: PendingJob) -> float:
        """The job's priority (higher runs first)."""
        w = self.config.weights
        age, fs_a, fs_u, qos, size, service = self._values(job)
        return (
            w.age * age
            + w.fairshare_account * fs_a
            + w.fairshare_user * fs_u
            + w.qos * qos
            + w.size * size
            + w.service * service
            + w.job_priority * job.priority
            + w.partition_tier * job.priority_tier
        )

    def _values(self, job: PendingJob) -> tuple[float, float, float, float, float, float]:
        cfg = self.config
        age = min(1.0, max(0.0, self.now - job.submit_time) / cfg.max_age)
        gpus = max(1, job.gpus) * job.nodes
        size = max(0.0, 1.0 - gpus / self.cluster_gpus)
        expected = expected_runtime(job, cfg, self.usage) * gpus
        service = max(0.0, 1.0 - math.log1p(expected / 60.0) / _LOG_MAX_SERVICE)
        return (
            age,
            self.account_fs.get(job.account, 1.0),
            self.user_fs.get(job.user, 1.0),
            cfg.qos_level(job.qos),
            size,
            service,
        )


def expected_runtime(job: PendingJob, cfg: PolicyConfig, usage: Usage) -> float:
    """Best guess of the job's run time without knowing it (see the module docstring)."""
    limit = cfg.limit_of(job.time_limit)
    if job.default_limit or job.time_limit <= 0:
        typical = usage.runtime_user.get(job.user) or usage.runtime_account.get(job.account)
        return min(limit, typical) if typical else limit
    return limit * min(1.0, usage.limit_ratio_user.get(job.user, UNKNOWN_LIMIT_RATIO))


def _fairshare(usage: Mapping[str, float], shares: dict[str, float]) -> dict[str, float]:
    total_usage = sum(usage.get(k, 0.0) for k in shares)
    total_shares = sum(shares.values())
    if total_usage <= 0 or total_shares <= 0:
        return dict.fromkeys(shares, 1.0)
    out = {}
    for key, share in shares.items():
        entitled = share / total_shares
        fraction = usage.get(key, 0.0) / total_usage
        out[key] = 2.0 ** (-fraction / entitled) if entitled > 0 else 0.0
    return out
