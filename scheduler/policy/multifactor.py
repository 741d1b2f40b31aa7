"""rota's own policy: multifactor priority, conservative backfill, preemption.

Jobs run in priority order (``priority.py``: age, fair share, QoS, size and expected service,
where expected service comes from time limits corrected by each user's history, never from
true durations); the pass is ``backfill.run_pass`` with time limits as durations.

Priorities are computed with ``now`` rounded down to ``config.priority_period``, so
consecutive passes in one period with the same usage share them: the policy's
``queue.OrderCache``, keyed by (rounded now, usage as_of and version, cluster size, config),
keeps the sorted queue and moves only new, changed or removed jobs. The plan is the same with
or without the cache.
"""

from __future__ import annotations

from collections.abc import Sequence

from rota.scheduler.policy.base import QueuePolicy
from rota.scheduler.policy.priority import Factor, PriorityContext
from rota.scheduler.policy.queue import SortKey
from rota.scheduler.policy.snapshot import PendingJob, Snapshot


class RotaPolicy(QueuePolicy):
    """Highest multifactor priority first (ties: older, then lower id); preempts."""

    name = "rota"
    order_by = "multifactor priority"
    preemption = True  # when ``config.preemption`` allows it

    def ranking(self, snapshot: Snapshot) -> tuple[object, SortKey]:
        ctx = PriorityContext(snapshot)
        priority = ctx.priority

        def sort_key(job: PendingJob) -> tuple[float, float, int]:
            return (-priority(job), job.submit_time, job.id)

        return (ctx.key, snapshot.config), sort_key

    def priorities(self, snapshot: Snapshot, jobs: Sequence[PendingJob]) -> dict[int, float]:
        """As the sum of ``factors`` gives them, with one context for all."""
        priority = PriorityContext(snapshot).priority
        return {j.id: priority(j) for j in jobs}

    def factors(self, snapshot: Snapshot, job: PendingJob) -> tuple[Factor, ...]:
        """The multifactor terms, then the job's own priority and its partitions' tier, each
        times its weight."""
        w = snapshot.config.weights
        own = Factor("job_priority", float(job.priority), w.job_priority)
        tier = Factor("partition_tier", float(job.priority_tier), w.partition_tier)
        return (*PriorityContext(snapshot).factors(job), own, tier)
