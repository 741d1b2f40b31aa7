"""rota's own policy: multifactor priority, conservative backfill, preemption.

Jobs run in priority order (``priority.py``: age, fair share, QoS, size and expected service,
where expected service comes from time limits corrected by each user's history, never from
true durations); the pass is ``backfill.run_pass`` with time limits as durations.

Priorities are computed with ``now`` rounded down to ``config.priority_period``, so
consecutive passes in one period with the same usage share them: a cache keyed by
(rounded now, usage as_of and version, cluster size, config) keeps each job's sort key and
recomputes only new or changed jobs. The plan is the same with or without the cache.
"""

from __future__ import annotations

from rota.scheduler.policy.backfill import run_pass
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.priority import PriorityContext
from rota.scheduler.policy.snapshot import PendingJob, Plan, RunningJob, Snapshot

_SortKey = tuple[float, float, int]


class _PriorityCache:
    """Sort keys of the previous pass, valid while context key and config are unchanged."""

    def __init__(self) -> None:
        self.key: tuple[float, float, int, int] | None = None
        self.config: PolicyConfig | None = None
        self.entries: dict[int, tuple[PendingJob, _SortKey]] = {}

    def ordered(self, snapshot: Snapshot) -> list[PendingJob]:
        ctx = PriorityContext(snapshot)
        if ctx.key != self.key or not (
            self.config is snapshot.config or self.config == snapshot.config
        ):
            self.key, self.config, self.entries = ctx.key, snapshot.config, {}
        entries = self.entries
        keyed: list[tuple[_SortKey, PendingJob]] = []
        for job in snapshot.pending:
            entry = entries.get(job.id)
            if entry is None or not (entry[0] is job or entry[0] == job):
                entry = (job, (-ctx.priority(job), job.submit_time, job.id))
                entries[job.id] = entry
            keyed.append((entry[1], job))
        if len(entries) > 2 * len(keyed) + 1024:
            self.entries = {job.id: entries[job.id] for _, job in keyed}
        keyed.sort(key=_first)
        return [job for _, job in keyed]


def _first(item: tuple[_SortKey, PendingJob]) -> _SortKey:
    return item[0]


_CACHE = _PriorityCache()


def ordered(snapshot: Snapshot) -> list[PendingJob]:
    """Pending jobs, highest priority first (ties: older, then lower id)."""
    return _CACHE.ordered(snapshot)


def decide(snapshot: Snapshot) -> Plan:
    """rota's plan for one pass."""
    cfg = snapshot.config

    def duration(job: PendingJob) -> float:
        return cfg.limit_of(job.time_limit)

    def running_end(job: RunningJob) -> float:
        return job.start_time + cfg.limit_of(job.time_limit)

    return run_pass(
        snapshot, ordered(snapshot), duration=duration, running_end=running_end, preemption=True
    )
