"""What a policy offers (``Policy``) and the shape the queue-ordered policies share.

A policy is an object built from its configuration (``rota.scheduler.policy.make_policy``).
It owns the caches it keeps between passes (queue order, cluster state; they save work and
never change a plan) behind a lock of its own, so one instance serves one call at a time.
Work that must never wait for a pass (the daemon's dry runs) uses an instance of its own:
instances share nothing.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol

from rota.scheduler.policy import reasons
from rota.scheduler.policy.attained import AttainedQueues
from rota.scheduler.policy.backfill import Duration, RunningEnd, run_pass
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.explain import Explanation
from rota.scheduler.policy.never_fits import never_fits
from rota.scheduler.policy.priority import Factor
from rota.scheduler.policy.queue import OrderCache, SortKey
from rota.scheduler.policy.snapshot import PendingJob, Plan, RunningJob, Snapshot
from rota.scheduler.policy.state_cache import StateCache


class Policy(Protocol):
    """A scheduling policy.

    ``config`` is what it was built with; the snapshots given to it carry it
    (``Snapshot.config``), and a pass reads the snapshot's. ``reads_true_durations``: the
    policy reads ``true_duration``, which only the simulator sets.
    """

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> PolicyConfig: ...

    @property
    def reads_true_durations(self) -> bool: ...

    def order(self, snapshot: Snapshot) -> list[PendingJob]:
        """Pending jobs in the order the policy considers them, first first."""
        ...

    def decide(self, snapshot: Snapshot) -> Plan:
        """The plan of one pass."""
        ...

    def explain(self, snapshot: Snapshot, job_id: int) -> Explanation:
        """Why pending job ``job_id`` waits; KeyError if it is not pending."""
        ...

    def priorities(self, snapshot: Snapshot, jobs: Sequence[PendingJob]) -> dict[int, float]:
        """The priority ``explain`` reports, for each of ``jobs`` (squeue's ``%Q``)."""
        ...


class PolicyBase(ABC):
    """``explain`` from ``order``, ``decide`` and the policy's priority ``factors``."""

    name = ""
    order_by = "submission time"  # what ``order`` sorts by, in words (``gqueue --explain``)
    reads_true_durations = False

    def __init__(self, config: PolicyConfig) -> None:
        self.config = config

    @abstractmethod
    def order(self, snapshot: Snapshot) -> list[PendingJob]: ...

    @abstractmethod
    def decide(self, snapshot: Snapshot) -> Plan: ...

    def factors(self, snapshot: Snapshot, job: PendingJob) -> tuple[Factor, ...]:
        """The terms of ``job``'s priority (none: the policy orders by something else)."""
        return ()

    def queues(self, snapshot: Snapshot) -> AttainedQueues | None:
        """The attained-service queues that may preempt (None: no such rule)."""
        return None

    def priorities(self, snapshot: Snapshot, jobs: Sequence[PendingJob]) -> dict[int, float]:
        return {j.id: sum(f.contribution for f in self.factors(snapshot, j)) for j in jobs}

    def explain(self, snapshot: Snapshot, job_id: int) -> Explanation:
        job = next((j for j in snapshot.pending if j.id == job_id), None)
        if job is None:
            raise KeyError(job_id)
        factors = self.factors(snapshot, job)
        plan = self.decide(snapshot)
        order = self.order(snapshot)
        starts = any(p.job_id == job_id for p in plan.placements)
        queues = self.queues(snapshot)
        attained = queues.describe(job, snapshot.running) if queues and queues.active else ""
        reason = None if starts else plan.reasons.get(job_id)
        detail = never_fits(job, snapshot.nodes) if reason == reasons.BAD_CONSTRAINTS else None
        return Explanation(
            job_id=job_id,
            policy=self.name,
            priority=sum(f.contribution for f in factors),
            factors=factors,
            rank=next(i for i, j in enumerate(order, 1) if j.id == job_id),
            starts_now=starts,
            reason=reason,
            est_start=plan.est_start.get(job_id),
            order_by=self.order_by,
            attained=attained,
            detail=detail or "",
        )


class QueuePolicy(PolicyBase):
    """A pass of ``backfill.run_pass`` over the queue in the policy's order.

    Subclasses say how they rank jobs (``ranking``), how long jobs run (``durations``,
    ``running_end``), whether they backfill and preempt (by class, by attained-service
    ``queues``), and how many blocked jobs hold a reservation (``depth``; None: the config's
    ``backfill_depth``). The queue order and cluster
    state are kept between passes (``queue.OrderCache``, ``state.StateCache``).
    """

    backfill = True
    preemption = False
    by_class = True  # the (QoS, priority) preemption rule
    depth: int | None = None
    reserve_blocked = True  # False: blocked jobs only try preemption (greedy)

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__(config)
        self._queue = OrderCache()
        self._state = StateCache()
        self._lock = threading.RLock()  # the caches serve one call at a time

    @abstractmethod
    def ranking(self, snapshot: Snapshot) -> tuple[object, SortKey]:
        """(context, sort key) of the order: the key must end with the job id and depend on
        nothing but the job and the context (see ``queue.OrderCache``)."""

    def durations(self, snapshot: Snapshot) -> Duration | None:
        """How long a pending job runs once started (None: its time limit)."""
        return None

    def running_end(self, snapshot: Snapshot) -> RunningEnd:
        """When a running job is assumed to end (default: start + time limit)."""
        cfg = snapshot.config

        def end(job: RunningJob) -> float:
            return job.start_time + cfg.limit_of(job.time_limit)

        return end

    def order(self, snapshot: Snapshot) -> list[PendingJob]:
        with self._lock:
            return list(self._ordered(snapshot))

    def _ordered(self, snapshot: Snapshot) -> list[PendingJob]:
        """``order`` without the copy: the cache's own list, valid while the lock is held."""
        context, sort_key = self.ranking(snapshot)
        return self._queue.ordered(snapshot, context, sort_key)

    def decide(self, snapshot: Snapshot) -> Plan:
        cfg = snapshot.config
        with self._lock:
            return run_pass(
                snapshot,
                self._ordered(snapshot),
                duration=self.durations(snapshot),
                running_end=self.running_end(snapshot),
                backfill=self.backfill,
                preemption=self.preemption,
                cache=self._state,
                end_key=cfg.default_time_limit,
                max_job_test=cfg.backfill_max_job_test if self.backfill else 0,
                queue=self._queue,
                depth=self.depth,
                reserve_blocked=self.reserve_blocked,
                queues=self.queues(snapshot),
                by_class=self.by_class,
            )
