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
from operator import attrgetter
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
        self.generation = 0  # counts changes of the order
        self.last_added: list[PendingJob] | None = None  # the last change, if only additions
        self._special: dict[int, PendingJob] | None = {}
        self._simple_gpus: Counter[int] = Counter()

    def clear(self) -> None:
        """Forget everything (the next pass sorts from scratch)."""
        generation = self.generation
        self.__init__()  # type: ignore[misc]
        self.generation = generation + 1

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
        if removed or added:
            self.generation += 1
            self.last_added = None if removed else list(added)
        entries, keys, jobs = self.entries, self.keys, self.jobs
        special, simple_gpus = self._special, self._simple_gpus  # kept once counted
        for job_id in removed:
            gone, key = entries.pop(job_id)
            if special is not None and special.pop(job_id, None) is None:
                simple_gpus[gone.gpus] -= 1
            at = bisect_left(keys, key)
            del keys[at]
            del jobs[at]
        for job in added:
            if job.id in entries:  # an id twice: let a full rebuild sort it out
                return self._rebuild(snapshot, context, sort_key)
            key = sort_key(job)
            entries[job.id] = (job, key)
            if special is not None:
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
        pending = snapshot.pending
        old = self.entries if self.pending is not None and context == self.context else {}
        if old:
            keys = []
            for job in pending:
                entry = old.get(job.id)
                same = entry is not None and (entry[0] is job or entry[0] == job)
                keys.append(entry[1] if same and entry is not None else sort_key(job))
        else:
            keys = list(map(sort_key, pending))
        order = sorted(range(len(pending)), key=keys.__getitem__)
        self.context, self.sort_key = context, sort_key
        self.pending, self.version = pending, snapshot.version
        self.generation += 1
        self.last_added = None
        self.keys = list(map(keys.__getitem__, order))
        self.jobs = list(map(pending.__getitem__, order))
        self.entries = dict(
            zip(map(_job_id, pending), zip(pending, keys, strict=True), strict=True)
        )
        self._special = None  # counted when first needed
        if len(self.entries) != len(pending):  # duplicate ids: keep every job, uncached
            self.pending = None
            return sorted(pending, key=sort_key)
        return self.jobs

    @property
    def special(self) -> dict[int, PendingJob]:
        """The queued jobs that are not ``simple``, by id."""
        if self._special is None:
            self._count()
        assert self._special is not None
        return self._special

    @property
    def simple_gpus(self) -> Counter[int]:
        """How many queued simple jobs want N GPUs."""
        if self._special is None:
            self._count()
        return self._simple_gpus

    def _count(self) -> None:
        special = {job.id: job for job in self.jobs if not simple(job)}
        self._simple_gpus = Counter(job.gpus for job in self.jobs if job.id not in special)
        self._special = special


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
        and not (job.gpu_type or job.gpu_memory or job.node_selector or job.partitions)
        and not (job.nodelist or job.exclude or job.constraint)
    )


_job_id = attrgetter("id")
