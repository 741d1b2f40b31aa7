"""Attained-service queues (Tiresias' discretised 2D-LAS) and who they let preempt whom.

A checkpointable job's attained service is the GPU-seconds it has run over all its attempts
(``attained`` plus, while it runs, GPUs x time since ``start_time``). ``thresholds`` split
that into queues: queue 0 below the first threshold, 1 below the second, and so on. Jobs that
are not checkpointable stay in queue 0 and are never preempted by this rule (they would lose
their work). Starvation guard: a pending checkpointable job that has waited
``starvation_factor`` times as long as it has run goes back to queue 0, and while that
attempt runs only its own service counts (Tiresias resets a promoted job's service), so a
job never outranks, the moment it starts, the job it was promoted above.

A pending job of queue q may preempt a running checkpointable job of a queue above q when
the victim's QoS level is not above the job's, it has run ``min_runtime`` (per QoS and
partition) in this attempt, and it was preempted fewer than ``max_preemptions_per_hour``
times in the last hour.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass

from rota.scheduler.policy.config import HOUR, PolicyConfig
from rota.scheduler.policy.snapshot import PendingJob, RunningJob, Snapshot


@dataclass(frozen=True, slots=True)
class AttainedQueues:
    """The queue rule of one pass at ``now``. Pending jobs' queues are taken at ``rank_now``
    (default ``now``), the time the queue order was computed at, so that the preemption rule
    and the order agree. ``safe`` False (the ``las`` reference) drops ``min_runtime``, the
    hourly budget and the QoS check."""

    config: PolicyConfig
    now: float
    safe: bool = True
    rank_now: float | None = None

    @property
    def active(self) -> bool:
        """Whether the rule has queues at all."""
        return bool(self.config.attained_thresholds)

    def level(self, attained: float) -> int:
        """The queue of ``attained`` GPU-seconds."""
        return bisect_right(self.config.attained_thresholds, attained)

    def starved(self, attained: float, gpus: int, submit_time: float, at: float) -> bool:
        """Whether a job with ``attained`` GPU-seconds on ``gpus`` GPUs, waiting at ``at``,
        has waited ``starvation_factor`` times as long as it has run."""
        factor = self.config.starvation_factor
        if factor <= 0 or attained <= 0:
            return False
        ran = attained / max(1, gpus)
        return at - submit_time - ran >= factor * ran

    def pending_queue(self, job: PendingJob) -> int:
        """The queue of a pending job (0 unless checkpointable; starved jobs get 0)."""
        if not job.checkpointable or job.attained <= 0:
            return 0
        at = self.now if self.rank_now is None else self.rank_now
        if self.starved(job.attained, job.gpus * job.nodes, job.submit_time, at):
            return 0
        return self.level(job.attained)

    def running_attained(self, job: RunningJob) -> float:
        """GPU-seconds a running job has attained, this attempt included."""
        return job.attained + job.gpu_count * max(0.0, self.now - job.start_time)

    def running_queue(self, job: RunningJob) -> int:
        """The queue of a running job (0 unless checkpointable). A job that started starved
        counts only this attempt's service, as its promotion reset its queue."""
        if not job.checkpointable:
            return 0
        gpus = job.gpu_count
        promoted = self.starved(job.attained, gpus, job.submit_time, job.start_time)
        base = 0.0 if promoted else job.attained
        return self.level(base + gpus * max(0.0, self.now - job.start_time))

    def victim_queue(self, job: RunningJob) -> int | None:
        """The queue of a running job this rule could preempt now, else None."""
        if not job.checkpointable or job.stopping or job.interactive:
            return None
        queue = self.running_queue(job)
        if queue == 0:
            return None
        if self.safe:
            cfg = self.config
            if self.now - job.start_time < cfg.min_runtime_of(job.qos, job.partition):
                return None
            budget = cfg.max_preemptions_per_hour
            if budget and sum(t > self.now - HOUR for t in job.preempted_at) >= budget:
                return None
        return queue

    def may_preempt(self, job: PendingJob, victim: RunningJob, victim_queue: int) -> bool:
        """Whether pending ``job`` may preempt ``victim`` (whose ``victim_queue`` is not None)."""
        return self.allows(self.pending_queue(job), job, victim, victim_queue)

    def allows(self, queue: int, job: PendingJob, victim: RunningJob, victim_queue: int) -> bool:
        """``may_preempt`` for a ``job`` whose pending queue is already known (``queue``)."""
        if queue >= victim_queue:
            return False
        if not self.safe:
            return True
        cfg = self.config
        return cfg.qos_level(victim.qos) <= cfg.qos_level(job.qos)

    def describe(self, job: PendingJob, running: tuple[RunningJob, ...], most: int = 8) -> str:
        """``gqueue --explain``: the job's queue and whom it may preempt (``most`` jobs named)."""
        limits = ", ".join(f"{t / HOUR:g}" for t in self.config.attained_thresholds)
        head = (
            f"queue {self.pending_queue(job)} of {len(self.config.attained_thresholds) + 1} "
            f"({job.attained / HOUR:.2f} GPU-hours attained; thresholds {limits} GPU-hours)"
        )
        if not job.checkpointable:
            head += "; not checkpointable: never preempted by attained service"
        lines = [head]
        for victim in sorted(running, key=lambda r: r.id)[:most]:
            lines.append(self._against(job, victim))
        if len(running) > most:
            lines.append(f"... and {len(running) - most} more running jobs")
        return "\n".join(lines)

    def _against(self, job: PendingJob, victim: RunningJob) -> str:
        if not victim.checkpointable:
            return f"job {victim.id} is not checkpointable: never preempted by this rule"
        queue = self.running_queue(victim)
        if queue <= self.pending_queue(job):
            return f"job {victim.id} is in queue {queue}, not above this job's"
        if self.victim_queue(victim) is None:
            return f"job {victim.id} (queue {queue}) is protected now (min_runtime or budget)"
        if not self.may_preempt(job, victim, queue):
            return f"job {victim.id} (queue {queue}) has a higher QoS"
        return f"may preempt job {victim.id} (queue {queue})"

    def why(self, job: PendingJob, victim: RunningJob) -> str:
        """The preemption's reason in words (its event)."""
        hours = self.running_attained(victim) / HOUR
        return (
            f"preempted by job {job.id} (attained-service queue {self.pending_queue(job)}): "
            f"this job is in queue {self.running_queue(victim)} with {hours:.2f} GPU-hours attained"
        )


def rank_time(snapshot: Snapshot) -> float:
    """``now`` rounded down to ``priority_period``, as the multifactor priority takes it."""
    period = snapshot.config.priority_period
    return math.floor(snapshot.now / period) * period if period > 0 else snapshot.now
