"""The cluster model: live jobs, known nodes, a version, and which jobs changed.

It mirrors committed database rows (it is loaded from them at start-up) and only the core thread
touches it. Commit, then swap: a service builds new job records (``dataclasses.replace`` of the
model's), hands them to ``commit``, which writes them and only then swaps them in (live ones
take their id's place, ended ones leave) and feeds the observers (the usage book); a failed write
raises and changes nothing here. Inside ``together()`` commits are gathered, swapped in at once
(later commits of the block read them) and written in one transaction when the block ends; a
failed write puts back every record the block replaced. The snapshot builder takes the changed
ids (``take_changed``) to rebuild only their views. ``version`` goes up with every change a
scheduling pass could see.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence

from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeState
from rota.scheduler.store.protocols import JobRepository, NodeRepository

# fed every committed batch of jobs and events, once written (derived state: the usage book)
Observer = Callable[[Sequence[JobRecord], Sequence[JobEvent]], None]


class ClusterModel:
    """Live jobs by id and nodes by name, as committed. Not thread-safe."""

    def __init__(
        self,
        jobs: JobRepository,
        nodes: NodeRepository,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
    ) -> None:
        self._stored = jobs  # where ``commit`` writes
        self.jobs: dict[int, JobRecord] = {j.id: j for j in jobs.active()}
        self.nodes: dict[str, NodeState] = {n.name: n for n in nodes.all()}
        now, started = clock(), monotonic()
        for node in self.nodes.values():
            # no agent is connected until it says hello; monotonic time does not survive a
            # process, so each node's node_grace counts from this start
            node.down_since, node.grace_from = now, started
        self.version = 0
        self.starts: dict[int, float] = {}  # estimated starts of the last applied plan
        self._changed: set[int] = set(self.jobs)
        self._gathered: tuple[dict[int, JobRecord], list[JobEvent]] | None = None
        self._before: dict[int, JobRecord | None] = {}  # a block's replaced records, by id
        self._observers: list[Observer] = []

    def observe(self, observer: Observer) -> None:
        """Feed ``observer`` every batch of jobs and events once it is written."""
        self._observers.append(observer)

    def commit(self, jobs: Sequence[JobRecord], events: Sequence[JobEvent]) -> None:
        """Store changed jobs and their events in one transaction, then swap the jobs into the
        model (live ones take their id's place, ended ones leave), feed the observers and mark
        the jobs changed. ``jobs`` are new records, never the model's own ones changed in place.
        When the write fails the error propagates and the model is as it was. Inside
        ``together()`` the jobs are swapped in at once and written when the block ends."""
        if self._gathered is None:
            self._stored.save(jobs, events)
            self._swap(jobs)
            self._feed(jobs, events)
        else:
            for job in jobs:
                self._before.setdefault(job.id, self.jobs.get(job.id))
            self._swap(jobs)
            self._gathered[0].update((j.id, j) for j in jobs)
            self._gathered[1].extend(events)
        self.touch(j.id for j in jobs)
        self.touch(e.job_id for e in events)

    def _swap(self, jobs: Iterable[JobRecord]) -> None:
        for job in jobs:
            if job.state.terminal:
                self.jobs.pop(job.id, None)
            else:
                self.jobs[job.id] = job

    def _feed(self, jobs: Sequence[JobRecord], events: Sequence[JobEvent]) -> None:
        for observer in self._observers:
            observer(jobs, events)

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """Gather the block's commits into one transaction, written when it ends (each job
        once, as it is then; events in order). If the block or the write raises, the error
        propagates, every record the block replaced is put back and, when the block raised,
        nothing gathered is written."""
        if self._gathered is not None:  # already inside a block: it writes everything
            yield
            return
        gathered: tuple[dict[int, JobRecord], list[JobEvent]] = ({}, [])
        self._gathered, self._before = gathered, {}
        try:
            try:
                yield
            finally:
                self._gathered = None
            jobs = list(gathered[0].values())
            self._stored.save(jobs, gathered[1])
        except BaseException:
            self._restore()
            raise
        self._before = {}
        self._feed(jobs, gathered[1])

    def _restore(self) -> None:
        for job_id, job in self._before.items():
            if job is None:
                self.jobs.pop(job_id, None)
            else:
                self.jobs[job_id] = job
        self._before = {}

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
