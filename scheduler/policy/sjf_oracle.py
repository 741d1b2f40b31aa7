"""``sjf-oracle``: shortest true duration first, with backfill on true durations.

A reference that cannot exist in production: it reads ``true_duration``, which only the
simulator sets (jobs without it fall back to their time limit). It shows how much room a
policy that does not know durations has left.
"""

from __future__ import annotations

import threading

from rota.scheduler.policy.backfill import run_pass
from rota.scheduler.policy.queue import OrderCache
from rota.scheduler.policy.snapshot import PendingJob, Plan, RunningJob, Snapshot
from rota.scheduler.policy.state import StateCache


def _duration(snapshot: Snapshot, job: PendingJob) -> float:
    if job.true_duration is not None:
        return job.true_duration
    return snapshot.config.limit_of(job.time_limit)


_STATE = StateCache()
_ORDER = OrderCache()  # kept between passes (keys depend on the job and the default limit)


_LOCK = threading.RLock()  # the caches serve one pass at a time


def ordered(snapshot: Snapshot) -> list[PendingJob]:
    """Pending jobs by true duration, then GPUs, submission time and id."""
    with _LOCK:
        return list(_ordered(snapshot))


def _ordered(snapshot: Snapshot) -> list[PendingJob]:

    def sort_key(j: PendingJob) -> tuple[float, int, float, int]:
        return (_duration(snapshot, j), j.gpus * j.nodes, j.submit_time, j.id)

    return _ORDER.ordered(snapshot, snapshot.config.default_time_limit, sort_key)


def decide(snapshot: Snapshot) -> Plan:
    """Plan in order of true duration, backfilling on true durations."""
    cfg = snapshot.config

    def duration(job: PendingJob) -> float:
        return _duration(snapshot, job)

    def running_end(job: RunningJob) -> float:
        if job.true_duration is not None:
            return job.start_time + job.true_duration
        return job.start_time + cfg.limit_of(job.time_limit)

    with _LOCK:
        return run_pass(
            snapshot,
            _ordered(snapshot),
            duration=duration,
            running_end=running_end,
            cache=_STATE,
            end_key=cfg.default_time_limit,
            max_job_test=cfg.backfill_max_job_test,
            queue=_ORDER,
        )
