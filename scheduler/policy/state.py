"""Mutable per-pass cluster state: free resources now and free GPUs over time per node.

Each node keeps the GPUs free now and a step profile of how its free GPU count changes later
(running jobs release theirs at start + time limit; reservations take theirs during their
window). A job fits now on a node when it gets enough GPUs, CPUs and memory now and the
profile never drops below its GPU count before its time limit ends, so a job placed now
never delays a reservation. Profiles count GPUs only: CPUs and memory are checked now, not
reserved ahead (jobs that need them but no GPU are rare); GPU-type filters are checked on
the GPUs free now, and profiles assume a node's GPUs are alike.

Exclusive jobs hold a node whole, which GPU counts alone cannot say for jobs that need no
GPU: each node also keeps its *claims*, windows ``[start, end)`` of exclusive jobs running,
placed or reserved there (*whole*: no other job may overlap one) and of reservations for
jobs that need no GPU (no exclusive job may overlap one), and the end times of the jobs
there that hold no GPU (an exclusive job starts only after them).
"""

from __future__ import annotations

import math
from bisect import insort
from collections.abc import Callable, Iterable

from rota.scheduler.policy.fit import gpu_ok, node_matches
from rota.scheduler.policy.snapshot import NodeView, PendingJob, RunningJob
from rota.scheduler.policy.topology import choose_gpus

INF = math.inf
ConstraintKey = tuple[str, int, tuple[tuple[str, str], ...]] | None
# free, cpus, memory, used, reserved, changes, releases, claims, gpuless
_Saved = tuple[
    list[int],
    float,
    int,
    bool,
    bool,
    list[tuple[float, int]],
    list[float],
    list[tuple[float, float, bool]],
    list[tuple[float, int]],
]
# (job, [(node idx, GPUs taken)], release time, regular)
_Held = tuple[RunningJob, list[tuple[int, int]], float, bool]


def constraint_key(job: PendingJob) -> ConstraintKey:
    """Static constraints of a job (None: any node will do)."""
    if not job.node_selector and not job.gpu_type and not job.gpu_memory:
        return None
    return (job.gpu_type, job.gpu_memory, tuple(sorted(job.node_selector.items())))


def window_ok(
    level: int, changes: list[tuple[float, int]], gpus: int, start: float, end: float
) -> bool:
    """Whether a profile (free GPUs now, sorted changes) keeps ``gpus`` free over ``[start, end)``.

    Changes at one instant net out before the level is compared.
    """
    n = len(changes)
    i = 0
    while i < n and changes[i][0] <= start:
        level += changes[i][1]
        i += 1
    if level < gpus:
        return False
    while i < n and changes[i][0] < end:
        when = changes[i][0]
        while i < n and changes[i][0] == when:
            level += changes[i][1]
            i += 1
        if level < gpus:
            return False
    return True


class NodeState:
    """One node during a pass."""

    __slots__ = (
        "allocatable",
        "changes",
        "claims",
        "cpus",
        "free",
        "gpuless",
        "holders",
        "idx",
        "memory",
        "releases",
        "reserved",
        "stopping",
        "total",
        "used",
        "view",
    )

    def __init__(self, idx: int, view: NodeView) -> None:
        self.idx = idx
        self.view = view
        self.allocatable = _allocatable(view)
        self.free: list[int] = list(self.allocatable)
        self.total = len(self.free)
        self.cpus = view.cpus
        self.memory = view.memory
        self.used = False
        self.holders: dict[int, tuple[float, int]] = {}  # running job id -> (cpus, memory)
        self.reserved = False  # some reservation takes GPUs here later
        self.stopping = 0  # GPUs held by jobs that were told to stop
        self.changes: list[tuple[float, int]] = []  # (time, delta of free GPUs), sorted
        self.releases: list[float] = []  # one end time per held GPU, sorted (no reservations)
        self.claims: list[tuple[float, float, bool]] = []  # (start, end, whole), sorted
        self.gpuless: list[tuple[float, int]] = []  # (end, job id) of holders of no GPU, sorted

    def save(self) -> _Saved:
        """The fields a pass may change (for ``ClusterState.undo``)."""
        return (
            self.free,
            self.cpus,
            self.memory,
            self.used,
            self.reserved,
            list(self.changes),
            list(self.releases),
            list(self.claims),
            list(self.gpuless),
        )

    def restore(self, saved: _Saved) -> None:
        (
            self.free,
            self.cpus,
            self.memory,
            self.used,
            self.reserved,
            self.changes,
            self.releases,
            self.claims,
            self.gpuless,
        ) = saved

    def refresh_held(self) -> None:
        """CPUs and memory left by running jobs (``fsum``: the same in any order)."""
        held = self.holders
        view = self.view
        if not held:
            self.cpus, self.memory, self.used = view.cpus, view.memory, False
            return
        self.used = True
        cpus = [c for c, _ in held.values() if c]
        self.cpus = view.cpus - math.fsum(cpus) if cpus else view.cpus
        self.memory = view.memory - sum(m for _, m in held.values())

    def hold(self, count: int, end: float) -> None:
        """``count`` GPUs taken now come free again at ``end``."""
        insort(self.changes, (end, count))
        for _ in range(count):
            insort(self.releases, end)

    def move_release(self, old: float, new: float, count: int) -> None:
        """``count`` GPUs expected free at ``old`` come free at ``new`` instead."""
        if (old, count) in self.changes:
            self.changes.remove((old, count))
            for _ in range(count):
                self.releases.remove(old)
        self.hold(count, new)

    def window_ok(self, gpus: int, start: float, end: float, exclusive: bool = False) -> bool:
        """Whether ``gpus`` GPUs stay free over ``[start, end)`` and no claim keeps a job
        (an ``exclusive`` one) off the node then."""
        if self.claims and self.claimed(start, end, exclusive):
            return False
        return window_ok(len(self.free), self.changes, gpus, start, end)

    def claimed(self, start: float, end: float, exclusive: bool) -> bool:
        """Whether a claim keeps a job (an ``exclusive`` one) off the node in ``[start, end)``."""
        return any(s < end and start < e and (whole or exclusive) for s, e, whole in self.claims)

    def claim(self, start: float, end: float, whole: bool) -> None:
        """Claim the node over ``[start, end)``: for an exclusive job (``whole``), or for a
        job that needs no GPU (keeps exclusive jobs off)."""
        insort(self.claims, (start, end, whole))
        self.reserved = True  # profile walks must see the claim

    def earliest(self, gpus: int, duration: float, after: float, exclusive: bool = False) -> float:
        """Earliest ``t >= after`` with ``gpus`` GPUs free over ``[t, t + duration)`` and no
        claim in the way (``window_ok``); INF if never."""
        if not self.reserved:  # the profile only rises: free from its lower bound on
            return self.lower_bound(gpus, after)
        candidates = [after] + [when for when, delta in self.changes if when > after and delta > 0]
        if self.claims:
            candidates = sorted(candidates + [e for _, e, _ in self.claims if e > after])
        for t in candidates:
            if self.window_ok(gpus, t, t + duration, exclusive):
                return t
        return INF

    def empty_from(self) -> float:
        """When every holder of no GPU has ended (GPU holders are in the profile)."""
        return self.gpuless[-1][0] if self.gpuless else -INF

    def lower_bound(self, gpus: int, after: float) -> float:
        """A time before which ``gpus`` GPUs cannot be free (reservations only lower levels)."""
        return max(after, self.release_bound(gpus))

    def release_bound(self, gpus: int) -> float:
        """When running and placed jobs will have released enough for ``gpus`` free GPUs."""
        missing = gpus - len(self.free)
        if missing <= 0:
            return -INF
        if missing > len(self.releases):
            return INF
        return self.releases[missing - 1]


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
        self._saved: dict[int, _Saved] | None = None  # node idx -> fields before this pass
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
        """Schedulable nodes whose labels suit ``key``, with their GPUs that suit it."""
        usable = self._usable_by_key.get(key)
        if usable is None:
            usable = []
            for n in self.nodes:
                if not n.view.schedulable:
                    continue
                if key is None:
                    usable.append((n, len(n.view.gpus)))
                elif all(n.view.labels.get(k) == v for k, v in key[2]):
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
        """Best-fit nodes (fewest free GPUs first) where ``job`` fits now until ``end``."""
        if job.gpus * job.nodes > self.total_free:
            return None
        chosen: list[NodeState] = []
        for count in range(job.gpus, len(self.buckets)):
            for idx in self.buckets[count]:
                node = self.nodes[idx]
                if self._fits(job, node, key, end):
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

    def earliest(
        self, job: PendingJob, key: ConstraintKey, duration: float
    ) -> tuple[float, list[NodeState]]:
        """Earliest start of ``job`` on schedulable nodes and the nodes it would get there."""
        now = self.now
        if job.nodes == 1 and key is None and not (job.exclusive or job.cpus or job.memory):
            return self._earliest_plain(job, duration)
        if key is None and not (job.exclusive or job.cpus or job.memory):  # a plain gang
            return self._earliest_gang(job, duration, self._plain_bounds(job))
        nodes = self.matching(job, key)
        bounds = sorted((self._lower_bound(job, n, now), n.idx) for n in nodes)
        if job.nodes == 1:
            best, best_node = INF, None
            for bound, idx in bounds:
                if bound >= best:
                    break
                node = self.nodes[idx]
                t = node.earliest(self._need(job, node), duration, bound, job.exclusive)
                if t < best:
                    best, best_node = t, node
            return (best, [best_node]) if best_node is not None else (INF, [])
        return self._earliest_gang(job, duration, bounds)

    def _earliest_gang(
        self, job: PendingJob, duration: float, bounds: list[tuple[float, int]]
    ) -> tuple[float, list[NodeState]]:
        """Earliest start of a gang: the first time at which ``job.nodes`` nodes can each
        hold their share for ``duration``, from nodes sorted by lower bound.

        Candidate times are the nodes' own earliest starts in increasing order. A node's
        start is computed only once its lower bound is no later than the candidate being
        tried (a node with a later bound cannot start by then), so a gang looks at the nodes
        that free up first, not at all of them; the answer is the one that computing every
        node's start would give.
        """
        starts: list[tuple[float, int]] = []  # computed (start, idx), sorted
        nodes, count = self.nodes, len(bounds)
        j = 0
        at = job.nodes - 1  # index in ``starts`` of the candidate tried
        while True:
            while (
                j < count
                and bounds[j][0] < INF
                and (at >= len(starts) or bounds[j][0] <= starts[at][0])
            ):
                bound, idx = bounds[j]
                j += 1
                node = nodes[idx]
                t = node.earliest(self._need(job, node), duration, bound, job.exclusive)
                insort(starts, (t, idx))
            if at >= len(starts):
                return INF, []
            t = starts[at][0]
            if t == INF:
                return INF, []
            ok = [
                nodes[idx]
                for start, idx in starts
                if start <= t
                and (
                    not nodes[idx].reserved
                    or nodes[idx].window_ok(
                        self._need(job, nodes[idx]), t, t + duration, job.exclusive
                    )
                )
            ]
            if len(ok) >= job.nodes:
                return t, ok[: job.nodes]
            at += 1

    def _plain_bounds(self, job: PendingJob) -> list[tuple[float, int]]:
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

    def _earliest_plain(self, job: PendingJob, duration: float) -> tuple[float, list[NodeState]]:
        """``earliest`` for a one-node job without constraints, from kept release bounds."""
        bounds = self._plain_bounds(job)
        best, best_node = INF, None
        for bound, idx in bounds:
            if bound >= best:
                break
            node = self.nodes[idx]
            t = node.earliest(job.gpus, duration, bound)
            if t < best:
                best, best_node = t, node
        return (best, [best_node]) if best_node is not None else (INF, [])

    def _lower_bound(self, job: PendingJob, node: NodeState, now: float) -> float:
        """A time before which ``job`` cannot start on ``node``."""
        bound = node.lower_bound(self._need(job, node), now)
        return max(bound, node.empty_from()) if job.exclusive else bound

    @staticmethod
    def _need(job: PendingJob, node: NodeState) -> int:
        return node.total if job.exclusive else job.gpus

    def _drop_bucket(self, node: NodeState) -> None:
        if node.view.schedulable:
            self.buckets[len(node.free)].remove(node.idx)

    def _add_bucket(self, node: NodeState) -> None:
        if node.view.schedulable:
            insort(self.buckets[len(node.free)], node.idx)


def _allocatable(view: NodeView) -> tuple[int, ...]:
    """Sorted allocatable GPU indices of a node view."""
    return tuple(sorted(g.index for g in view.gpus if g.allocatable))


def _name_mem(node: NodeState, index: int) -> tuple[str, int]:
    gpu = next(g for g in node.view.gpus if g.index == index)
    return gpu.name, gpu.memory_total


class StateCache:
    """One policy's ``ClusterState`` between passes.

    ``acquire`` returns the state for a snapshot: the kept one updated with the nodes whose
    views changed (a few of the same names in the same order) and the running jobs that
    changed, when ``end_key`` (what ``end_of`` computes, e.g. the default time limit) is
    unchanged; else a new one. ``release`` keeps the state for the next pass: undone at once,
    or, with ``run`` (what the pass carried from job to job), left as the pass ended so that
    the next pass may ``resume`` it; the next ``acquire`` undoes it. A pass that raised never
    releases: its state is dropped.
    """

    def __init__(self) -> None:
        self.state: ClusterState | None = None
        self.nodes: tuple[NodeView, ...] | None = None
        self.end_key: object = None
        self.run: object = None  # the kept pass's loop state (``backfill._Loop``)

    def acquire(
        self,
        nodes: tuple[NodeView, ...],
        running: tuple[RunningJob, ...],
        now: float,
        end_key: object,
        end_of: Callable[[RunningJob], float],
    ) -> ClusterState:
        state, self.state, self.run = self.state, None, None
        if state is not None:
            state.undo()
        if (
            state is None
            or not (end_key is self.end_key or end_key == self.end_key)
            or not self._nodes_replaced(state, nodes)
            or not state.update(running, end_of)
        ):
            state = ClusterState(nodes, running, now, end_of)
            self.end_key = end_key
        self.nodes = nodes
        state.begin(now)
        return state

    def _nodes_replaced(self, state: ClusterState, nodes: tuple[NodeView, ...]) -> bool:
        """Whether ``state`` now holds ``nodes``: the kept ones, or a few of them changed
        and replaced; False: rebuild."""
        kept = self.nodes
        if nodes is kept:
            return True
        if kept is None or len(nodes) != len(kept):
            return False
        changed = [
            (i, v)
            for i, (k, v) in enumerate(zip(kept, nodes, strict=True))
            if k is not v and k != v
        ]
        if not changed:
            return True
        if len(changed) > max(32, len(nodes) // 4) or any(
            kept[i].name != v.name for i, v in changed
        ):
            return False
        return state.replace_nodes(changed)

    def resume(self) -> ClusterState | None:
        """The state as the kept pass left it (its changes still recorded), or None."""
        state, self.state, self.run = self.state, None, None
        return state if state is not None and state.dirty else None

    def clear(self) -> None:
        """Forget the kept state (the next pass builds it from scratch)."""
        self.state = self.nodes = self.run = None

    def release(self, state: ClusterState, run: object = None) -> None:
        if run is None:
            state.undo()
        self.state, self.run = state, run
