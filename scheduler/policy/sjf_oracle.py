"""``sjf-oracle``: shortest true duration first, with backfill on true durations.

A reference that cannot exist in production: it reads ``true_duration``, which only the
simulator sets (jobs without it fall back to their time limit). It shows how much room a
policy that does not know durations has left.
"""

from __future__ import annotations

from rota.scheduler.policy.backfill import Duration, RunningEnd
from rota.scheduler.policy.base import QueuePolicy
from rota.scheduler.policy.queue import SortKey
from rota.scheduler.policy.snapshot import PendingJob, RunningJob, Snapshot


class SjfOraclePolicy(QueuePolicy):
    """Pending jobs by true duration, then GPUs, submission time and id."""

    name = "sjf-oracle"
    order_by = "true duration, shortest first"
    reads_true_durations = True

    def ranking(self, snapshot: Snapshot) -> tuple[object, SortKey]:
        duration = self.durations(snapshot)

        def sort_key(j: PendingJob) -> tuple[float, int, float, int]:
            return (duration(j), j.gpus * j.nodes, j.submit_time, j.id)

        # keys depend on the job and the default limit
        return snapshot.config.default_time_limit, sort_key

    def durations(self, snapshot: Snapshot) -> Duration:
        limit_of = snapshot.config.limit_of

        def duration(job: PendingJob) -> float:
            if job.true_duration is not None:
                return job.true_duration
            return limit_of(job.time_limit)

        return duration

    def running_end(self, snapshot: Snapshot) -> RunningEnd:
        limit_of = snapshot.config.limit_of

        def end(job: RunningJob) -> float:
            if job.true_duration is not None:
                return job.start_time + job.true_duration
            return job.start_time + limit_of(job.time_limit)

        return end
