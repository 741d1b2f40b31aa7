"""The cluster model: live jobs, known nodes, a version, and which jobs changed.

It mirrors committed database rows (it is loaded from them at start-up) and only the core thread
touches it. Every change to a job is committed through ``commit``, which records the job as
changed; the snapshot builder takes those ids (``take_changed``) to rebuild only their views.
``version`` goes up with every change a scheduling pass could see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

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

    def commit(self, jobs: Sequence[JobRecord], events: Sequence[JobEvent]) -> None:
        """Store changed jobs and their events in one transaction and mark them changed."""
        self.store.save(jobs, events)
        self.touch(j.id for j in jobs)
        self.touch(e.job_id for e in events)

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
