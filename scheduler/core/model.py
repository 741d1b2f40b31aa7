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
from rota.scheduler.store.store import Store


class ClusterModel:
    """Live jobs by id and nodes by name, as committed. Not thread-safe."""

    def __init__(self, store: Store, clock: Callable[[], float]) -> None:
        self.store = store
        self.jobs: dict[int, JobRecord] = {j.id: j for j in store.active_jobs()}
        self.nodes: dict[str, NodeState] = {n.name: n for n in store.nodes()}
        now = clock()
        for node in self.nodes.values():
            node.down_since = now  # no agent is connected until it says hello
        self.version = 0
        self.starts: dict[int, float] = {}  # estimated starts of the last applied plan
        self._changed: set[int] = set(self.jobs)
        self._gathered: tuple[dict[int, JobRecord], list[JobEvent]] | None = None

    def commit(self, jobs: Sequence[JobRecord], events: Sequence[JobEvent]) -> None:
        """Store changed jobs and their events in one transaction and mark them changed
        (inside ``together()``: when the block ends)."""
        if self._gathered is None:
            self.store.save(jobs, events)
        else:
            self._gathered[0].update((j.id, j) for j in jobs)
            self._gathered[1].extend(events)
        self.touch(j.id for j in jobs)
        self.touch(e.job_id for e in events)

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """Gather the block's commits into one transaction, written when it ends (each job
        once, as it is then; events in order). If the block or the write raises, the error
        propagates and, when the block raised, nothing gathered is written."""
        if self._gathered is not None:  # already inside a block: it writes everything
            yield
            return
        gathered: tuple[dict[int, JobRecord], list[JobEvent]] = ({}, [])
        self._gathered = gathered
        try:
            yield
        finally:
            self._gathered = None
        self.store.save(gathered[0].values(), gathered[1])

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
