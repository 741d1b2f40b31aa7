"""rota's own policy: multifactor priority, conservative backfill, preemption.

Jobs run in priority order (``priority.py``: age, fair share, QoS, size and expected service,
where expected service comes from time limits corrected by each user's history, never from
true durations); the pass is ``backfill.run_pass`` with time limits as durations.

Priorities are computed with ``now`` rounded down to ``config.priority_period``, so
consecutive passes in one period with the same usage share them: ``queue.OrderCache``, keyed
by (rounded now, usage as_of and version, cluster size, config), keeps the sorted queue and
moves only new, changed or removed jobs. The plan is the same with or without the cache.
"""

from __future__ import annotations

import threading

from rota.scheduler.policy.backfill import run_pass
from rota.scheduler.policy.priority import PriorityContext
from rota.scheduler.policy.queue import OrderCache
from rota.scheduler.policy.snapshot import PendingJob, Plan, RunningJob, Snapshot
from rota.scheduler.policy.state import StateCache

_CACHE = OrderCache()
_STATE = StateCache()
_LOCK = threading.RLock()  # the caches serve one pass at a time (the daemon's dry runs too)


def ordered(snapshot: Snapshot) -> list[PendingJob]:
    """Pending jobs, highest priority first (ties: older, then lower id)."""
    with _LOCK:
        return list(_ordered(snapshot))


def _ordered(snapshot: Snapshot) -> list[PendingJob]:
    """``ordered`` without the copy: the cache's own list, valid while the lock is held."""
    ctx = PriorityContext(snapshot)
    priority = ctx.priority

    def sort_key(job: PendingJob) -> tuple[float, float, int]:
        return (-priority(job), job.submit_time, job.id)

    return _CACHE.ordered(snapshot, (ctx.key, snapshot.config), sort_key)


def decide(snapshot: Snapshot) -> Plan:
    """rota's plan for one pass."""
    cfg = snapshot.config

    def running_end(job: RunningJob) -> float:
        return job.start_time + cfg.limit_of(job.time_limit)

    with _LOCK:
        return run_pass(
            snapshot,
            _ordered(snapshot),
            duration=None,  # time limits
            running_end=running_end,
            preemption=True,
            cache=_STATE,
            end_key=cfg.default_time_limit,
            max_job_test=cfg.backfill_max_job_test,
            queue=_CACHE,
        )
