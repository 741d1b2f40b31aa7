"""Baselines in submission order: strict ``fifo`` and SLURM-like ``fifo-backfill``.

``fifo`` starts jobs in submission order and stops at the first eligible job that does not
fit. ``fifo-backfill`` is SLURM's default shape (priority/basic with sched/backfill): the
same order, conservative backfill for the first ``backfill_depth`` blocked jobs, time
limits as run times; no preemption; like SLURM (``bf_max_job_test=500``, its default) it
tests at most the first ``BF_MAX_JOB_TEST`` eligible jobs per pass. ``fifo`` needs no cap:
it stops at its first blocked job.
"""

from __future__ import annotations

from operator import attrgetter

from rota.scheduler.policy.backfill import run_pass
from rota.scheduler.policy.queue import OrderCache
from rota.scheduler.policy.snapshot import PendingJob, Plan, RunningJob, Snapshot
from rota.scheduler.policy.state import StateCache

SUBMIT_ORDER = attrgetter("submit_time", "id")
_ORDER = OrderCache()  # submission order, kept between passes
_STATE = {True: StateCache(), False: StateCache()}  # cluster state per baseline
# SLURM's default bf_max_job_test: the backfill scheduler tests at most this many jobs per
# cycle, in priority order; later jobs wait untested (reason Priority) until they move up.
BF_MAX_JOB_TEST = 500


def _pass(snapshot: Snapshot, backfill: bool) -> Plan:
    cfg = snapshot.config

    def duration(job: PendingJob) -> float:
        return cfg.limit_of(job.time_limit)

    def running_end(job: RunningJob) -> float:
        return job.start_time + cfg.limit_of(job.time_limit)

    order = _ORDER.ordered(snapshot, None, SUBMIT_ORDER)
    return run_pass(
        snapshot,
        order,
        duration=duration,
        running_end=running_end,
        backfill=backfill,
        cache=_STATE[backfill],
        end_key=cfg.default_time_limit,
        queue=_ORDER,
        max_job_test=BF_MAX_JOB_TEST if backfill else 0,
    )


def decide_fifo(snapshot: Snapshot) -> Plan:
    """Strict first-in first-out."""
    return _pass(snapshot, backfill=False)


def decide_fifo_backfill(snapshot: Snapshot) -> Plan:
    """First-in first-out with conservative backfill."""
    return _pass(snapshot, backfill=True)
