"""Accounting: NVML figures gathered per running job from heartbeats, written when the job has
ended, and the finished-job listings and totals ``gacct`` shows; old jobs are purged after the
retention period (``accounting_retention``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from rota.scheduler.cluster.accounting import (
    AccountingQuery,
    FinishedJob,
    JobUsage,
    StepRow,
    UsageTotal,
    totals,
)
from rota.scheduler.cluster.model import JobEvent, JobRecord
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.job_steps import batch_row, step_rows
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.store.protocols import ReservationRepository, UsageRepository
from rota.states import JobState

PURGE_EVERY = 3600.0  # seconds between retention purges


class UsageMeter:
    """Per running job: the sum and count of its GPUs' utilisation samples and the peak memory
    used on one of them. Kept in memory; ``take_ended`` hands over the jobs that have ended.
    O(GPUs of the node) per heartbeat: the GPU -> job index is rebuilt only when the model's
    version moved."""

    def __init__(self, model: ClusterModel) -> None:
        self.model = model
        self._live: dict[int, JobUsage] = {}
        self._holders: dict[str, dict[int, JobRecord]] = {}
        self._holders_version = -1

    def observe(self, node_name: str, session: int) -> None:
        """Add the latest telemetry of the live session ``session`` to the jobs running on
        the node's GPUs."""
        node = self.model.nodes.get(node_name)
        if node is None or node.session != session or not node.telemetry:
            return
        holders = self._holders_of(node_name)
        if not holders:
            return
        totals = {g.index: g.memory_total for g in node.inventory.gpus}
        for t in node.telemetry:
            job = holders.get(t.index)
            if job is None or t.error or t.utilization is None:
                continue
            usage = self._live.get(job.id)
            if usage is None:
                usage = self._live[job.id] = JobUsage(job.id)
            usage.add(t.utilization, t.memory_used, totals.get(t.index, 0))

    def live(self, job_id: int) -> JobUsage | None:
        return self._live.get(job_id)

    def take_ended(self) -> list[JobUsage]:
        """The figures of jobs that are no longer live, forgotten here."""
        ended = [u for job_id, u in self._live.items() if job_id not in self.model.jobs]
        for usage in ended:
            del self._live[usage.job_id]
        return ended

    def _holders_of(self, node_name: str) -> dict[int, JobRecord]:
        if self._holders_version != self.model.version:
            index: dict[str, dict[int, JobRecord]] = {}
            for job in self.model.jobs.values():
                if job.state is JobState.RUNNING:
                    for alloc in job.allocation:
                        index.setdefault(alloc.node, {}).update(dict.fromkeys(alloc.gpus, job))
            self._holders, self._holders_version = index, self.model.version
        return self._holders.get(node_name, {})


class AccountingService:
    """Finished jobs with their NVML figures; writes the meter's ended jobs in one transaction
    (on every tick and before every query) and purges jobs past the retention."""

    def __init__(
        self,
        model: ClusterModel,
        store: UsageRepository,
        meter: UsageMeter,
        config: SchedulerConfig,
        clock: Callable[[], float],
        bookings: ReservationRepository,
        history: Callable[[int], Sequence[JobEvent]] = lambda job_id: (),
    ) -> None:
        """``history``: a job's stored events, where its srun steps are recorded."""
        self.model = model
        self.store = store
        self.history = history
        self.bookings = bookings  # how ended reservation windows were spent
        self.meter = meter
        self.config = config
        self.clock = clock
        self._purged_at = 0.0

    def flush(self) -> None:
        ended = self.meter.take_ended()
        if ended:
            self.store.save(ended)

    def tick(self) -> None:
        """Write ended jobs' figures; purge jobs that ended before the retention period (at
        most once an hour; a retention of 0 keeps everything)."""
        self.flush()
        now = self.clock()
        retention = self.config.accounting_retention
        if retention > 0 and now - self._purged_at >= PURGE_EVERY:
            self._purged_at = now
            self.store.purge_ended(now - retention)

    def finished(self, query: AccountingQuery) -> list[FinishedJob]:
        self.flush()
        return self.store.finished(query)

    def listing(self, query: AccountingQuery) -> list[FinishedJob | StepRow]:
        """``finished``, each job asked for by id followed by its batch script's line
        (``12.batch``) and its steps (a step asked for by id, ``12.0``, without its job)."""
        rows = self.finished(query)
        if not (query.whole or query.steps):
            return list(rows)
        out: list[FinishedJob | StepRow] = []
        for row in rows:
            display = row.job.display_id
            whole = {display, str(row.job.id), str(row.job.array_job_id)} & set(query.whole)
            if whole:
                out.append(row)
            if whole or any(s.startswith(f"{display}.") for s in query.steps):
                batch = batch_row(row.job)
                steps = [*([batch] if batch else []), *step_rows(row.job, self.history(row.job.id))]
                out += [r for r in steps if whole or r.display_id in query.steps]
        return out

    def summary(self, query: AccountingQuery) -> tuple[list[UsageTotal], list[UsageTotal]]:
        """GPU-hours and mean utilisation per user and per account; per user also the
        GPU-hours of their bookings' windows ended in the period that their owners did not
        use ("booked but unused": lent, idle or released)."""
        users, accounts = totals(self.finished(dataclasses.replace(query, limit=0)))
        unused = self.bookings.booked_unused(query.start, query.end)
        shown = {u: s for u, s in unused.items() if not query.users or u in query.users}
        if query.principal:
            shown = {u: s for u, s in shown.items() if u == query.principal}
        by_name = {t.name: t for t in users}
        for user, seconds in shown.items():
            by_name.setdefault(user, UsageTotal(user)).booked_unused = seconds / 3600
        return [by_name[k] for k in sorted(by_name)], accounts
