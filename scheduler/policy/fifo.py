"""Baselines in submission order: strict ``fifo`` and SLURM-like ``fifo-backfill``.

``fifo`` starts jobs in submission order and stops at the first eligible job that does not
fit. ``fifo-backfill`` is SLURM's default shape (priority/basic with sched/backfill): the
same order, conservative backfill for the first ``backfill_depth`` blocked jobs, time
limits as run times; no preemption.
"""

from __future__ import annotations

from operator import attrgetter

from rota.scheduler.policy.backfill import run_pass
from rota.scheduler.policy.snapshot import PendingJob, Plan, RunningJob, Snapshot

SUBMIT_ORDER = attrgetter("submit_time", "id")


def _pass(snapshot: Snapshot, backfill: bool) -> Plan:
    cfg = snapshot.config

    def duration(job: PendingJob) -> float:
        return cfg.limit_of(job.time_limit)

    def running_end(job: RunningJob) -> float:
        return job.start_time + cfg.limit_of(job.time_limit)

    order = sorted(snapshot.pending, key=SUBMIT_ORDER)
    return run_pass(snapshot, order, duration=duration, running_end=running_end, backfill=backfill)


def decide_fifo(snapshot: Snapshot) -> Plan:
    """Strict first-in first-out."""
    return _pass(snapshot, backfill=False)


def decide_fifo_backfill(snapshot: Snapshot) -> Plan:
    """First-in first-out with conservative backfill."""
    return _pass(snapshot, backfill=True)
