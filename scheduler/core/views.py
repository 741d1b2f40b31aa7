"""The job views the snapshot builder keeps between passes, and which of them the next pass must
rebuild.

A pass after one submission must not cost O(all jobs). The builder therefore keeps one
``PendingJob`` or ``RunningJob`` per live job and rebuilds only the views of jobs that changed:

- every change to a job is committed through ``ClusterModel.commit`` (or marked with
  ``ClusterModel.touch``); the builder moves those ids here (``touch``) and they are ``dirty``;
- a pending job whose view depends on something besides itself (a dependency on other jobs,
  a begin time still ahead) is ``volatile`` and re-examined every pass.

Unchanged jobs keep their view objects, so the policy's own caches (queue order, cluster state)
see only the change. The reasons last written by ``apply`` are kept too, so that applying a
plan writes only those that differ (a touched job is forgotten there, so its next reason is
always written). Dependencies are resolved from memory too: the job ids each
dependency names, and the final states of ended targets (forgotten when touched, e.g. by a
requeue).
"""

from __future__ import annotations

from collections.abc import Iterable

from rota.scheduler.policy.snapshot import PendingJob, RunningJob
from rota.states import JobState


class JobViews:
    """Kept views by job id, the ids to re-examine, and the last applied reasons."""

    def __init__(self, dirty: set[int]) -> None:
        self.dirty = dirty
        self.volatile: set[int] = set()
        self.pending: dict[int, PendingJob] = {}
        self.running: dict[int, RunningJob] = {}
        self.keys: dict[int, tuple[object, ...]] = {}  # what each kept view was built from
        self.pending_tuple: tuple[PendingJob, ...] | None = None  # None: rebuild from dict
        self.running_tuple: tuple[RunningJob, ...] | None = None
        self.targets: dict[str, tuple[int, ...]] = {}  # dependency display id -> job ids
        self.ended: dict[int, JobState] = {}  # states of ended dependency targets
        self.reasons: dict[int, str] = {}  # as last applied
        self.named: set[int] = set()  # pending jobs that name a reservation

    def touch(self, ids: Iterable[int]) -> None:
        """Mark jobs changed: their views are rebuilt and their next reason written."""
        for job_id in ids:
            self.dirty.add(job_id)
            self.reasons.pop(job_id, None)
            self.ended.pop(job_id, None)

    def keep_pending(self, job_id: int, key: tuple[object, ...], view: PendingJob) -> None:
        if self.running.pop(job_id, None) is not None:
            self.running_tuple = None
        self.pending[job_id] = view
        self.keys[job_id] = key
        self.pending_tuple = None
        if view.reservation:
            self.named.add(job_id)
        else:
            self.named.discard(job_id)

    def keep_running(self, job_id: int, key: tuple[object, ...], view: RunningJob) -> None:
        if self.pending.pop(job_id, None) is not None:
            self.pending_tuple = None
        self.named.discard(job_id)
        self.running[job_id] = view
        self.keys[job_id] = key
        self.running_tuple = None

    def drop(self, job_id: int) -> None:
        """Forget a job that is neither pending nor active."""
        if self.pending.pop(job_id, None) is not None:
            self.pending_tuple = None
        if self.running.pop(job_id, None) is not None:
            self.running_tuple = None
        self.keys.pop(job_id, None)
        self.named.discard(job_id)
        self.volatile.discard(job_id)
        self.reasons.pop(job_id, None)

    def pending_jobs(self) -> tuple[PendingJob, ...]:
        """The kept pending views (the same tuple object while none changed)."""
        if self.pending_tuple is None:
            self.pending_tuple = tuple(self.pending.values())
        return self.pending_tuple

    def running_jobs(self) -> tuple[RunningJob, ...]:
        """The kept running views (the same tuple object while none changed)."""
        if self.running_tuple is None:
            self.running_tuple = tuple(self.running.values())
        return self.running_tuple
