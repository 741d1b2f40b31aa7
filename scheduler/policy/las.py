"""``las``: Tiresias' discretised 2D least-attained-service (NSDI'19), a reference.

Jobs are ordered by their attained-service queue (``attained.AttainedQueues``: GPU-seconds
run so far against ``config.attained_thresholds``, with the starvation guard), first come
first served within a queue. The pass is greedy and work-conserving: every job that fits
starts, blocked jobs hold no reservation (durations are unknown) and instead preempt
checkpointable jobs of higher queues, without ``min_runtime``, budget or QoS checks. Time
limits only end jobs.
"""

from __future__ import annotations

from rota.scheduler.policy.attained import AttainedQueues, rank_time
from rota.scheduler.policy.base import QueuePolicy
from rota.scheduler.policy.queue import SortKey
from rota.scheduler.policy.snapshot import PendingJob, Snapshot


class LasPolicy(QueuePolicy):
    """Lowest attained-service queue first, then submission time; preempts by queue."""

    name = "las"
    order_by = "attained-service queue, then submission time"
    preemption = True
    by_class = False
    reserve_blocked = False

    def ranking(self, snapshot: Snapshot) -> tuple[object, SortKey]:
        queue = self.queues(snapshot).pending_queue

        def sort_key(job: PendingJob) -> tuple[int, float, int]:
            return (queue(job), job.submit_time, job.id)

        return (rank_time(snapshot), snapshot.config), sort_key

    def queues(self, snapshot: Snapshot) -> AttainedQueues:
        return AttainedQueues(snapshot.config, snapshot.now, False, rank_time(snapshot))
