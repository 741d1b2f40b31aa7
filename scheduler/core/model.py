"""The cluster model: live jobs, known nodes, a version, and which jobs changed.

It mirrors committed database rows (it is loaded from them at start-up) and only the core thread
touches it. Every change to a job is committed through ``commit``, which records the job as
changed; the snapshot builder takes those ids (``take_changed``) to rebuild only their views.
Inside ``together()`` commits are gathered and written in one transaction when the block ends.
``version`` goes up with every change a scheduling pass could see.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence

from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeState
from rota.scheduler.store.protocols import JobRepository, NodeRepository


class ClusterModel:
    """Live jobs by id and nodes by name, as committed. Not thread-safe."""

    def __init__(
        self, jobs: JobRepository, nodes: NodeRepository, clock: Callable[[], float]
    ) -> None:
        self._stored = jobs  # where ``commit`` writes
        self.jobs: dict[int, JobRecord] = {j.id: j for j in jobs.active()}
        self.nodes: dict[str, NodeState] = {n.name: n for n in nodes.all()}
        now = clock()
        for node in self.nodes.values():
            node.down_since = now  # no agent is connected until it says hello
        self.version = 0
        self.starts: dict[int, float] = {}  # estimated starts of the last applied plan
        self._changed: set[int] = set(self.jobs)
        self._gathered: tuple[dict[int, JobRecord], list[JobEvent]] | None = None
        self._replaced: list[JobRecord] = []  # the records the gathered ones replace

    def commit(
        self,
        jobs: Sequence[JobRecord],
        events: Sequence[JobEvent],
        replaced: Sequence[JobRecord] = (),
    ) -> None:
        """Store changed jobs and their events in one transaction and mark them changed
        (inside ``together()``: when the block ends). Commit, then swap: ``jobs`` may be new
        records built (``dataclasses.replace``) from ``replaced``, the model's: they take
        their place (live ones; ended ones leave) only once stored. When the write fails the
        error propagates and the model keeps ``replaced`` as they were."""
        if self._gathered is None:
            try:
                self._stored.save(jobs, events)
            except BaseException:
                self._restore(replaced)
                raise
            self._swap(jobs, replaced)
        else:
            self._gathered[0].update((j.id, j) for j in jobs)
            self._gathered[1].extend(events)
            self._replaced.extend(replaced)
        self.touch(j.id for j in jobs)
        self.touch(e.job_id for e in events)

    def _swap(self, jobs: Iterable[JobRecord], replaced: Sequence[JobRecord]) -> None:
        ids = {j.id for j in replaced}
        for job in jobs:
            if job.id in ids and not job.state.terminal:
                self.jobs[job.id] = job

    def _restore(self, replaced: Sequence[JobRecord]) -> None:
        for job in replaced:
            self.jobs[job.id] = job

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """Gather the block's commits into one transaction, written when it ends (each job
        once, as it is then; events in order). If the block or the write raises, the error
        propagates and, when the block raised, nothing gathered is written."""
        if self._gathered is not None:  # already inside a block: it writes everything
            yield
            return
        gathered: tuple[dict[int, JobRecord], list[JobEvent]] = ({}, [])
        self._gathered, self._replaced = gathered, []
        replaced = self._replaced
        try:
            yield
        finally:
            self._gathered = None
        try:
            self._stored.save(gathered[0].values(), gathered[1])
        except BaseException:
            self._restore(replaced)
            raise
        self._swap(gathered[0].values(), replaced)

    def touch(self, ids: Iterable[int]) -> None:
        """Mark jobs changed (their snapshot views are rebuilt)."""
        self._changed.update(ids)

    def take_changed(self) -> set[int]:
        """The ids marked changed since the last call."""
        changed, self._changed = self._changed, set()
        return changed

    def bump(self) -> None:
        """Record a change a scheduling pass could see."""
        self.version += 1
