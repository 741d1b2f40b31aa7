"""A policy's queue order, kept between passes and updated from the change in pending jobs.

``OrderCache.ordered(snapshot, context, sort_key)`` returns the pending jobs sorted by
``sort_key`` (which must be unique per job: end it with the job id; one cache per policy,
since a key must depend on nothing but the job and ``context``). The sorted list and each
job's key are kept; the next pass finds the jobs that were added or removed and moves only
those (bisect), so a pass after one submission costs O(log n) comparisons plus a memmove
instead of a sort. Keys are recomputed from scratch whenever ``context`` (everything a key
depends on besides the job, e.g. the rounded time of the priorities and the usage version)
changes.

Finding the change is cheap when the producer keeps job objects between snapshots (the
simulator does; a daemon can cache one ``PendingJob`` per job version):

- ``Snapshot.delta`` (optional) says which ids left and which jobs came since the snapshot
  numbered ``delta.base``: O(change);
- else, when the previous pending tuple is a prefix of the new one (only submissions): one
  C-level tuple comparison;
- else a Python pass over the pending jobs by id (identity first, then equality).

It also keeps the jobs that are not ``simple`` (one node, GPUs only, nothing but resources
can hold them), which lets a pass give every simple job behind the point where nothing more
can start its reason in bulk (``backfill.run_pass``).

The result is the same list whichever path is taken (the order is a pure function of the
pending jobs, ``context`` and ``sort_key``); the cache only saves work.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable
from typing import Any

from rota.scheduler.policy.snapshot import PendingJob, Snapshot

SortKey = Callable[[PendingJob], Any]


class OrderCache:
    """Sorted pending jobs of the previous pass and their sort keys."""

    def __init__(self) -> None:
        self.context: object = None
        self.sort_key: SortKey | None = None
        self.pending: tuple[PendingJob, ...] | None = None
        self.version: int | None = None
        self.entries: dict[int, tuple[PendingJob, Any]] = {}  # id -> (job, key)
        self.keys: list[Any] = []
        self.jobs: list[PendingJob] = []
        # jobs that are not ``simple`` (see there), and how many simple jobs want N GPUs
        self.special: dict[int, PendingJob] = {}
        self.simple_gpus: Counter[int] = Counter()

    def ordered(self, snapshot: Snapshot, context: object, sort_key: SortKey) -> list[PendingJob]:
        """Pending jobs sorted by ``sort_key`` (read-only: do not mutate the list)."""
        pending = snapshot.pending
        if self.pending is None or not (context is self.context or context == self.context):
            return self._rebuild(snapshot, context, sort_key)
        if pending is self.pending:
            self.version = snapshot.version
            return self.jobs
        change = self._change(snapshot)
        if change is None:
            return self._rebuild(snapshot, context, sort_key)
        removed, added = change
        if len(removed) + len(added) > max(64, len(pending) // 4):
            return self._rebuild(snapshot, context, sort_key)
        entries, keys, jobs = self.entries, self.keys, self.jobs
        special, simple_gpus = self.special, self.simple_gpus
        for job_id in removed:
            gone, key = entries.pop(job_id)
            if special.pop(job_id, None) is None:
                simple_gpus[gone.gpus] -= 1
            at = bisect_left(keys, key)
            del keys[at]
            del jobs[at]
        for job in added:
            if job.id in entries:  # an id twice: let a full rebuild sort it out
                return self._rebuild(snapshot, context, sort_key)
            key = sort_key(job)
            entries[job.id] = (job, key)
            if simple(job):
                simple_gpus[job.gpus] += 1
            else:
                special[job.id] = job
            at = bisect_left(keys, key)
            keys.insert(at, key)
            jobs.insert(at, job)
        self.pending, self.version = pending, snapshot.version
        return jobs

    def _change(
        self, snapshot: Snapshot
    ) -> tuple[list[int], tuple[PendingJob, ...] | list[PendingJob]] | None:
        """(removed ids, added jobs) since the cached pass; None when it cannot be told."""
        pending, old = snapshot.pending, self.pending
        assert old is not None
        entries = self.entries
        delta = snapshot.delta
        if delta is not None and delta.base == self.version and self.version is not None:
            removed = [i for i in delta.removed if i in entries]
            if len(removed) == len(delta.removed) and len(pending) == len(old) - len(removed) + len(
                delta.added
            ):
                return removed, delta.added
        n = len(old)
        if len(pending) >= n and pending[:n] == old:
            return [], pending[n:]
        seen: set[int] = set()
        added: list[PendingJob] = []
        removed_changed: list[int] = []
        for job in pending:
            job_id = job.id
            seen.add(job_id)
            entry = entries.get(job_id)
            if entry is None:
                added.append(job)
            elif entry[0] is not job:
                if entry[0] != job:
                    removed_changed.append(job_id)
                    added.append(job)
                else:
                    entries[job_id] = (job, entry[1])
        if len(seen) != len(pending):
            return None  # duplicate ids: let a full sort decide
        removed = [i for i in entries if i not in seen]
        return removed + removed_changed, added

    def _rebuild(self, snapshot: Snapshot, context: object, sort_key: SortKey) -> list[PendingJob]:
        old = self.entries if self.pending is not None and context == self.context else {}
        entries: dict[int, tuple[PendingJob, Any]] = {}
        for job in snapshot.pending:
            entry = old.get(job.id)
            if entry is None or not (entry[0] is job or entry[0] == job):
                entry = (job, sort_key(job))
            entries[job.id] = entry
        ordered = sorted(entries.values(), key=_second)
        self.context, self.sort_key = context, sort_key
        self.pending, self.version = snapshot.pending, snapshot.version
        self.entries = entries
        self.keys = [key for _, key in ordered]
        self.jobs = [job for job, _ in ordered]
        self.special = {job.id: job for job in self.jobs if not simple(job)}
        self.simple_gpus = Counter(job.gpus for job in self.jobs if job.id not in self.special)
        if len(entries) != len(snapshot.pending):  # duplicate ids: keep every job, uncached
            self.pending = None
            return sorted(snapshot.pending, key=sort_key)
        return self.jobs


def simple(job: PendingJob) -> bool:
    """A job whose only needs are GPUs on one node, with nothing that could block it but
    resources: no service reason, array limit, constraint, exclusivity, CPUs or memory, and at
    least one GPU (so it cannot start while no GPU is free)."""
    return (
        job.blocked is None
        and job.nodes == 1
        and job.gpus >= 1
        and not job.array_task_limit
        and not (job.exclusive or job.cpus or job.memory)
        and not (job.gpu_type or job.gpu_memory or job.node_selector)
    )


def _second(entry: tuple[PendingJob, Any]) -> Any:
    return entry[1]
