"""Baselines in submission order: strict ``fifo`` and SLURM-like ``fifo-backfill``.

``fifo`` starts jobs in submission order and stops at the first eligible job that does not
fit. ``fifo-backfill`` is SLURM's default shape (priority/basic with sched/backfill): the
same order, conservative backfill for the first ``backfill_depth`` blocked jobs, time
limits as run times; no preemption. ``easy`` is EASY backfill (Lifka's, the classic
reference): the same, with a reservation for the first blocked job only. Like every backfill policy here it honours
``config.backfill_max_job_test`` (SLURM's ``bf_max_job_test``; off by default).
"""

from __future__ import annotations

from operator import attrgetter

from rota.scheduler.policy.base import QueuePolicy
from rota.scheduler.policy.queue import SortKey
from rota.scheduler.policy.snapshot import Snapshot

SUBMIT_ORDER = attrgetter("submit_time", "id")


class FifoBackfillPolicy(QueuePolicy):
    """First-in first-out with conservative backfill."""

    name = "fifo-backfill"

    def ranking(self, snapshot: Snapshot) -> tuple[object, SortKey]:
        return None, SUBMIT_ORDER


class FifoPolicy(FifoBackfillPolicy):
    """Strict first-in first-out: nothing starts behind the first job that waits."""

    name = "fifo"
    backfill = False


class EasyPolicy(FifoBackfillPolicy):
    """EASY backfill: submission order, only the first blocked job holds a reservation."""

    name = "easy"
    depth = 1
