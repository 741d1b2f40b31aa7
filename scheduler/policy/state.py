"""The cluster during a pass: every node's ``NodeState``, indexed by free GPU count for
best-fit placement, and the running jobs they hold.

Placement (``find``, ``take``), reservations for blocked jobs (``reserve``) and preemption
(``preempt``) change it; ``begin`` and ``undo`` record and put back what a pass changed;
``update`` and ``replace_nodes`` carry it to the next snapshot (``state_cache.StateCache``).
Earliest starts are searched in ``earliest.py``.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Iterable

from rota.constraint import Constraint
from rota.scheduler.policy.counts import pick_counted
from rota.scheduler.policy.fit import gpu_ok, holds, named_ok, node_matches
from rota.scheduler.policy.node_state import INF, NodeState, Saved
from rota.scheduler.policy.snapshot import NodeView, PendingJob, RunningJob
from rota.scheduler.policy.topology import choose_gpus

ConstraintKey = (
    tuple[
        str,
        int,
        tuple[tuple[str, str], ...],
        tuple[str, ...],
        frozenset[str],
        frozenset[str],
        Constraint | None,
    ]
    | None
)
# (job, [(node idx, GPUs taken)], release time, regular)
_Held = tuple[RunningJob, list[tuple[int, int]], float, bool]


def constraint_key(job: PendingJob) -> ConstraintKey:
    """Static constraints of a job (None: any node will do)."""
    if not (
        job.node_selector
        or job.gpu_type
        or job.gpu_memory
        or job.partitions
        or job.nodelist
        or job.exclude
        or job.constraint
    ):
        return None
    return (
        job.gpu_type,
        job.gpu_memory,
        tuple(sorted(job.node_selector.items())),
        tuple(sorted(job.partitions)),
        job.nodelist,
        job.exclude,
        job.constraint,
    )


class ClusterState:
    """Free resources of every node, indexed by free GPU count for best-fit placement.

    Built once from the nodes and running jobs, then kept between passes (``StateCache``):
    ``replace_nodes`` takes the nodes whose views changed, ``update`` applies the jobs that
    started or ended since, ``begin`` starts a pass and
    records what it changes, ``undo`` puts the state back as the snapshot left it. Release
    times are stored as the policy's ``end_of`` gives them (``-inf`` for stopping jobs), not
    clamped to ``now``: every reader treats a time before ``now`` as ``now``, so the same
    state serves passes at different times.
    """

    def __init__(
        self,
        nodes: Iterable[NodeView],
        running: Iterable[RunningJob],
        now: float,
        end_of: Callable[[RunningJob], float],
    ) -> None:
        self.now = now
        self.nodes = [NodeState(i, v) for i, v in enumerate(nodes)]
        self.by_name = {n.view.name: n for n in self.nodes}
        self._match: dict[tuple[ConstraintKey, int, float, int], list[NodeState]] = {}
        self._usable_by_key: dict[ConstraintKey, list[tuple[NodeState, int]]] = {}
        self._bounds: dict[int, list[tuple[float, int]]] = {}  # gpus -> sorted release bounds
        self._saved: dict[int, Saved] | None = None  # node idx -> fields before this pass
        self._saved_total = 0
        # running job id -> (job, [(node idx, GPUs taken)], end, regular)
        self._running: dict[int, _Held] = {}
        self.regular = True  # every running job holds GPUs no other holds (order-independent)
        apply, kept = self._apply, self._running
        for job in running:
            kept[job.id] = apply(job, end_of(job), False)
        width = max((n.total for n in self.nodes), default=0)
        self.buckets: list[list[int]] = [[] for _ in range(width + 1)]
        self.total_free = 0
        held_cr = any(c or m for n in self.nodes for c, m in n.holders.values())
        for node in self.nodes:
            node.changes.sort()
            node.releases.sort()
            node.claims.sort()
            node.gpuless.sort()
            if held_cr:
                node.refresh_held()
            else:  # no running job holds CPUs or memory: only ``used`` changes
                node.used = bool(node.holders)
            if node.view.schedulable:
                self.buckets[len(node.free)].append(node.idx)
                self.total_free += len(node.free)

    def _apply(self, job: RunningJob, end: float, sort: bool) -> _Held:
        """Take what a running job holds; ``sort`` keeps profiles sorted (else sort later)."""
        stopping, exclusive, job_id = job.stopping, job.exclusive, job.id
        if stopping:
            end = -INF
        parts: list[tuple[int, int]] = []
        regular = not exclusive
        by_name = self.by_name
        for alloc in job.allocations:
            node = by_name.get(alloc.node)
            if node is None:
                continue
            prior = node.free
            if exclusive:
                node.free = free = []
            else:
                held = alloc.gpu_indices
                node.free = free = [g for g in prior if g not in held]
                if len(prior) - len(free) != len(held):  # held elsewhere too, or not allocatable
                    allocatable = node.allocatable
                    regular = regular and all(g not in allocatable for g in held if g not in prior)
            taken = len(prior) - len(free)
            holders = node.holders
            if job_id in holders:
                cpus, memory = holders[job_id]
                holders[job_id] = (cpus + alloc.cpus, memory + alloc.memory)
            else:
                holders[job_id] = (alloc.cpus, alloc.memory)
            if exclusive:
                node.claims.append((-INF, end, True))
                node.reserved = True
            if not taken:
                node.gpuless.append((end, job_id))
                if sort:
                    node.gpuless.sort()
            if taken:
                if stopping:
                    node.stopping += taken
                if sort:
                    insort(node.changes, (end, taken))
                    for _ in range(taken):
                        insort(node.releases, end)
                else:
                    node.changes.append((end, taken))
                    node.releases += [end] * taken
            parts.append((node.idx, taken))
        if not regular:
            self.regular = False
        return (job, parts, end, regular)

    def update(
        self, running: tuple[RunningJob, ...], end_of: Callable[[RunningJob], float]
    ) -> bool:
        """Apply the running jobs that started, ended or changed; False: rebuild instead."""
        if self._saved is not None or not self.regular:
            return False
        known = self._running
        seen: set[int] = set()
        gone: list[int] = []
        new: list[RunningJob] = []
        unknown = 0
        for job in running:
            entry = known.get(job.id)
            seen.add(job.id)
            if entry is None:
                new.append(job)
                unknown += 1
            elif entry[0] is not job:
                if entry[0] != job:
                    gone.append(job.id)
                    new.append(job)
                else:
                    known[job.id] = (job, *entry[1:])
        if len(seen) != len(running):
            return False
        if len(known) > len(seen) - unknown:  # some kept jobs are no longer running
            gone.extend(i for i in known if i not in seen)
        if len(gone) + len(new) > max(32, len(running) // 2):
            return False
        touched: dict[int, int] = {}  # node idx -> free GPUs before
        for job_id in gone:
            self._release(job_id, touched)
        for job in new:
            if not self._hold(job, end_of(job), touched):
                return False
        self._settle(touched)
        return True

    def replace_nodes(self, changed: list[tuple[int, NodeView]]) -> bool:
        """Give the nodes at these indices their new views (each of the same name) with the
        kept running jobs there applied again; False: rebuild instead."""
        if self._saved is not None or not self.regular:
            return False
        held = {job_id for idx, _ in changed for job_id in self.nodes[idx].holders}
        jobs = [(self._running[job_id][0], self._running[job_id][2]) for job_id in sorted(held)]
        touched: dict[int, int] = {}
        for job, _ in jobs:
            self._release(job.id, touched)
        for idx, view in changed:
            old = self.nodes[idx]
            before = touched.pop(idx, len(old.free))
            if old.view.schedulable:
                self.buckets[before].remove(idx)
                self.total_free -= before
            node = self.nodes[idx] = self.by_name[view.name] = NodeState(idx, view)
            if len(self.buckets) <= node.total:
                self.buckets += [[] for _ in range(node.total + 1 - len(self.buckets))]
            if view.schedulable:
                insort(self.buckets[node.total], idx)
                self.total_free += node.total
        for job, end in jobs:
            if not self._hold(job, end, touched):
                return False
        self._settle(touched)
        self._match.clear()  # they hold the replaced nodes and what their views allowed
        self._usable_by_key.clear()
        self._bounds.clear()
        return True

    def _release(self, job_id: int, touched: dict[int, int]) -> None:
        """Give back what kept running job ``job_id`` holds (``touched``: node idx -> free
        GPUs before, for ``_settle``)."""
        job, parts, end, _ = self._running.pop(job_id)
        for idx, count in parts:
            node = self.nodes[idx]
            touched.setdefault(idx, len(node.free))
            held: set[int] = set()
            for alloc in job.allocations:
                if alloc.node == node.view.name:
                    held.update(alloc.gpu_indices)
            if not count:
                node.gpuless.remove((end, job_id))
            if count:
                allocatable = node.allocatable
                node.free = sorted([*node.free, *(g for g in held if g in allocatable)])
                node.changes.remove((end, count))
                for _ in range(count):
                    node.releases.remove(end)
            node.holders.pop(job_id, None)
            if job.stopping:
                node.stopping -= count

    def _hold(self, job: RunningJob, end: float, touched: dict[int, int]) -> bool:
        """Take what running ``job`` holds until ``end``; False when it makes the state
        irregular (a rebuild is needed)."""
        for alloc in job.allocations:
            holder = self.by_name.get(alloc.node)
            if holder is not None:
                touched.setdefault(holder.idx, len(holder.free))
        self._running[job.id] = self._apply(job, end, sort=True)
        return self.regular

    def _settle(self, touched: dict[int, int]) -> None:
        """Move the ``touched`` nodes to the buckets of their free GPU counts now."""
        for idx, before in touched.items():
            node = self.nodes[idx]
            node.refresh_held()
            if node.view.schedulable and before != len(node.free):
                self.buckets[before].remove(idx)
                insort(self.buckets[len(node.free)], idx)
                self.total_free += len(node.free) - before
        if touched:
            self._bounds.clear()

    def begin(self, now: float) -> None:
        """Start a pass at ``now``: record every node's fields before it first changes."""
        self.now = now
        self._saved = {}
        self._saved_total = self.total_free

    def undo(self) -> None:
        """Put back every node a pass changed (the state as the snapshot left it)."""
        saved = self._saved
        if saved is None:
            return
        for idx, fields in saved.items():
            node = self.nodes[idx]
            if node.view.schedulable:
                self.buckets[len(node.free)].remove(idx)
            node.restore(fields)
            if node.view.schedulable:
                insort(self.buckets[len(node.free)], idx)
        self.total_free = self._saved_total
        if saved:
            self._bounds.clear()
        self._saved = None

    @property
    def dirty(self) -> bool:
        """Whether a pass's changes are recorded and not undone yet."""
        return self._saved is not None

    def _touch(self, node: NodeState) -> None:
        saved = self._saved
        if saved is not None and node.idx not in saved:
            saved[node.idx] = node.save()

    def matching(self, job: PendingJob, key: ConstraintKey) -> list[NodeState]:
        """Schedulable nodes that could ever run ``job`` (static constraints and totals)."""
        cache_key = (key, job.gpus, job.cpus, job.memory)
        nodes = self._match.get(cache_key)
        if nodes is None:
            nodes = [
                n
                for n, usable in self._usable(job, key)
                if usable >= job.gpus
                and not (job.cpus and n.view.cpus and job.cpus > n.view.cpus)
                and not (job.memory and n.view.memory and job.memory > n.view.memory)
            ]
            self._match[cache_key] = nodes
        return nodes

    def _usable(self, job: PendingJob, key: ConstraintKey) -> list[tuple[NodeState, int]]:
        """Schedulable nodes whose labels and partitions suit ``key``, with their GPUs that
        suit it."""
        usable = self._usable_by_key.get(key)
        if usable is None:
            usable = []
            featured: dict[frozenset[str], bool] = {}  # the constraint, once per feature set
            for n in self.nodes:
                if not n.view.schedulable:
                    continue
                if key is None:
                    usable.append((n, len(n.view.gpus)))
                elif (
                    all(n.view.labels.get(k) == v for k, v in key[2])
                    and (not key[3] or not n.view.partitions.isdisjoint(key[3]))
                    and named_ok(job, n.view.name)
                    and (key[6] is None or holds(key[6], n.view.features, featured))
                ):
                    usable.append(
                        (n, sum(gpu_ok(job, g.name, g.memory_total) for g in n.view.gpus))
                    )
            self._usable_by_key[key] = usable
        return usable

    def _fits(self, job: PendingJob, node: NodeState, key: ConstraintKey, end: float) -> bool:
        if job.exclusive:
            if node.used or len(node.free) < node.total:
                return False
            need = node.total
        else:
            need = job.gpus
        if job.cpus and node.view.cpus and job.cpus > node.cpus:
            return False
        if job.memory and node.view.memory and job.memory > node.memory:
            return False
        if key is not None:
            if not node_matches(job, node.view):
                return False
            if key[0] or key[1]:
                usable = [i for i in node.free if gpu_ok(job, *_name_mem(node, i))]
                if len(usable) < job.gpus:
                    return False
        return not node.reserved or node.window_ok(need, self.now, end, job.exclusive)

    def find(self, job: PendingJob, key: ConstraintKey, end: float) -> list[NodeState] | None:
        """Best-fit nodes (fewest free GPUs first) where ``job`` fits now until ``end``; a
        gang with a matching OR (``[a|b]``) gets nodes that all satisfy one alternative, a job
        with counts (``[a*2&b*1]``) the first nodes that meet them."""
        if job.gpus * job.nodes > self.total_free:
            return None
        if job.constraint is not None and job.constraint.counts:
            best = (
                self.nodes[i] for g in range(job.gpus, len(self.buckets)) for i in self.buckets[g]
            )
            fitting = [n for n in best if self._fits(job, n, key, end)]
            picked = pick_counted(job.constraint, [n.view.features for n in fitting], job.nodes)
            return None if picked is None else [fitting[i] for i in picked]
        if job.nodes > 1 and job.constraint is not None and job.constraint.matching:
            for variant in job.constraint.variants():
                found = self._find(job, key, end, variant)
                if found is not None:
                    return found
            return None
        return self._find(job, key, end, None)

    def _find(
        self, job: PendingJob, key: ConstraintKey, end: float, variant: Constraint | None
    ) -> list[NodeState] | None:
        chosen: list[NodeState] = []
        for count in range(job.gpus, len(self.buckets)):
            for idx in self.buckets[count]:
                node = self.nodes[idx]
                if self._fits(job, node, key, end) and (
                    variant is None or variant.satisfied_by(node.view.features)
                ):
                    chosen.append(node)
                    if len(chosen) == job.nodes:
                        return chosen
        return None

    def gpus_for(self, job: PendingJob, node: NodeState, key: ConstraintKey) -> tuple[int, ...]:
        """The GPU indices ``job`` gets on ``node`` (closest interconnect first)."""
        free = node.free
        if key is not None and (key[0] or key[1]):
            free = [i for i in free if gpu_ok(job, *_name_mem(node, i))]
        return choose_gpus(free, job.gpus, node.view.links)

    def take(
        self,
        node: NodeState,
        gpus: tuple[int, ...],
        cpus: float,
        memory: int,
        exclusive: bool,
        end: float,
        job_id: int,
    ) -> None:
        """Job ``job_id``, placed now, holds these resources until ``end``."""
        self._touch(node)
        now = self.now
        for gpus_needed, bounds in self._bounds.items():
            old = (max(now, node.release_bound(gpus_needed)), node.idx)
            if old[0] < INF:
                bounds.remove(old)
        self._drop_bucket(node)
        taken = list(node.free) if exclusive else list(gpus)
        held = set(taken)
        before = len(node.free)
        node.free = [g for g in node.free if g not in held]
        node.cpus -= cpus
        node.memory -= memory
        node.used = True
        self.total_free -= before - len(node.free)
        self._add_bucket(node)
        if taken:
            node.hold(len(taken), end)
        else:
            insort(node.gpuless, (end, job_id))
        if exclusive:
            node.claim(self.now, end, True)
        for gpus_needed, bounds in self._bounds.items():
            new = (max(now, node.release_bound(gpus_needed)), node.idx)
            if new[0] < INF:
                insort(bounds, new)

    def preempt(self, node: NodeState, job: RunningJob, old: float, count: int) -> None:
        """Running ``job``, expected to release ``count`` GPUs of ``node`` (and its claim
        there, if exclusive) at ``old``, releases them now: it is preempted."""
        self._touch(node)
        now = self.now
        if count:
            node.move_release(old, now, count)
        elif (old, job.id) in node.gpuless:
            node.gpuless.remove((old, job.id))
            insort(node.gpuless, (now, job.id))
        if job.exclusive and (-INF, old, True) in node.claims:
            node.claims.remove((-INF, old, True))
            insort(node.claims, (-INF, now, True))
        self._bounds.clear()

    def reserve(self, nodes: Iterable[NodeState], gpus: int, start: float, end: float) -> None:
        """Set ``gpus`` GPUs of each node aside over ``[start, end)`` for a blocked job
        (``gpus`` < 0: an exclusive job; claims for those and for jobs needing no GPU)."""
        for node in nodes:
            self._touch(node)
            need = node.total if gpus < 0 else gpus
            insort(node.changes, (start, -need))
            insort(node.changes, (end, need))
            node.reserved = True
            if gpus <= 0:
                node.claim(start, end, gpus < 0)

    def plain_bounds(self, job: PendingJob) -> list[tuple[float, int]]:
        """Schedulable nodes with their earliest possible time for ``job.gpus`` free GPUs
        (release times only), sorted; kept up to date by ``take`` for the rest of the pass."""
        bounds = self._bounds.get(job.gpus)
        if bounds is None:
            now = self.now
            bounds = sorted(
                (max(now, b), n.idx)
                for n in self.matching(job, None)
                if (b := n.release_bound(job.gpus)) < INF
            )
            self._bounds[job.gpus] = bounds
        return bounds

    def _drop_bucket(self, node: NodeState) -> None:
        if node.view.schedulable:
            self.buckets[len(node.free)].remove(node.idx)

    def _add_bucket(self, node: NodeState) -> None:
        if node.view.schedulable:
            insort(self.buckets[len(node.free)], node.idx)


def _name_mem(node: NodeState, index: int) -> tuple[str, int]:
    gpu = next(g for g in node.view.gpus if g.index == index)
    return gpu.name, gpu.memory_total
