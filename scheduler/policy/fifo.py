"""Baselines in submission order: strict ``fifo`` and SLURM-like ``fifo-backfill``.

``fifo`` starts jobs in submission order and stops at the first eligible job that does not
fit. ``fifo-backfill`` is SLURM's default shape (priority/basic with sched/backfill): the
same order, conservative backfill for the first ``backfill_depth`` blocked jobs, time
limits as run times; no preemption. Like every backfill policy here it honours
``config.backfill_max_job_test`` (SLURM's ``bf_max_job_test``; off by default).
"""

from __future__ import annotations

import threading
from operator import attrgetter

from rota.scheduler.policy.backfill import run_pass
from rota.scheduler.policy.queue import OrderCache
from rota.scheduler.policy.snapshot import Plan, RunningJob, Snapshot
from rota.scheduler.policy.state import StateCache

SUBMIT_ORDER = attrgetter("submit_time", "id")
_ORDER = OrderCache()  # submission order, kept between passes
_STATE = {True: StateCache(), False: StateCache()}  # cluster state per baseline
_LOCK = threading.Lock()  # the caches serve one pass at a time


def _pass(snapshot: Snapshot, backfill: bool) -> Plan:
    cfg = snapshot.config

    def running_end(job: RunningJob) -> float:
        return job.start_time + cfg.limit_of(job.time_limit)

    with _LOCK:
        return run_pass(
            snapshot,
            _ORDER.ordered(snapshot, None, SUBMIT_ORDER),
            duration=None,  # time limits
            running_end=running_end,
            backfill=backfill,
            cache=_STATE[backfill],
            end_key=cfg.default_time_limit,
            queue=_ORDER,
            max_job_test=cfg.backfill_max_job_test if backfill else 0,
        )


def decide_fifo(snapshot: Snapshot) -> Plan:
    """Strict first-in first-out."""
    return _pass(snapshot, backfill=False)


def decide_fifo_backfill(snapshot: Snapshot) -> Plan:
    """First-in first-out with conservative backfill."""
    return _pass(snapshot, backfill=True)
