"""Choose running jobs to preempt for a blocked job, only when the job then fits.

A pending job may preempt a running job that is ``preemptible``, not a grun session (those are
preempted only off lent reserved GPUs, ``reserve.py``), not already stopping, and of
a lower class: class is (QoS level, job priority); with attained-service queues
(``attained.AttainedQueues``) also a checkpointable job of a higher queue. Victims on a node
are taken lowest class first, highest queue, then most recently started first, and only while they free something the job still lacks
(GPUs of its type and memory, CPUs, memory; an exclusive job needs every holder gone) until
the node has it all (what stopping jobs hold counts as free); the nodes needing the fewest
preempted GPUs win. The job is not placed in the same pass: its GPUs are reserved from now
on, and the daemon places it once the victims are gone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from rota.scheduler.policy.attained import AttainedQueues
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.fit import gpu_ok, same_alternative
from rota.scheduler.policy.node_state import INF, NodeState, window_ok
from rota.scheduler.policy.snapshot import PendingJob, RunningJob
from rota.scheduler.policy.state import ClusterState, ConstraintKey


@dataclass(frozen=True, slots=True)
class _Victim:
    job: RunningJob
    rank: tuple[float, int, int, float, int]  # class, highest queue, then most recent first
    end: float  # when the profile expects it to release its GPUs
    queue: int | None  # its attained-service queue when that rule may preempt it


@dataclass(frozen=True, slots=True)
class _Held:
    """What one running job holds on one node."""

    job_id: int
    gpus: tuple[int, ...]
    cpus: float
    memory: int


@dataclass(slots=True)
class _Room:
    """What a node would offer the job: GPUs that suit it, CPUs and memory."""

    gpus: set[int]
    cpus: float
    memory: int

    def add(self, held: _Held, suits: Callable[[int], bool]) -> None:
        self.gpus.update(g for g in held.gpus if suits(g))
        self.cpus += held.cpus
        self.memory += held.memory


class Preemptor:
    """Preemption planning over one pass (victims are taken at most once)."""

    def __init__(
        self,
        state: ClusterState,
        running: tuple[RunningJob, ...],
        cfg: PolicyConfig,
        end_of: Callable[[RunningJob], float],
        queues: AttainedQueues | None = None,
        by_class: bool = True,
    ) -> None:
        self.state = state
        self.cfg = cfg
        self.queues = queues if queues is not None and queues.active else None
        self.by_class = by_class  # the (QoS, priority) rule applies
        self.why: dict[int, str] = {}  # victim id -> why it is preempted
        # Plans that failed, by what decides them: a job no smaller and no longer fails too
        # (within a pass victims are only taken and resources only shrink).
        self.failed: dict[tuple[object, ...], list[tuple[int, float]]] = {}
        self.top_queue = 0  # highest queue of a candidate of the attained-service rule
        self.lowest_class: tuple[float, int] | None = None  # of the class rule's candidates
        self.by_node: defaultdict[str, list[tuple[_Victim, _Held]]] = defaultdict(list)
        self.stopping: defaultdict[str, list[_Held]] = defaultdict(list)
        self.holders: defaultdict[str, set[int]] = defaultdict(set)  # non-stopping job ids
        self.taken: set[int] = set()
        victims: list[tuple[RunningJob, _Victim]] = []
        for job in running:
            if job.stopping:
                for alloc in job.allocations:
                    held = _Held(job.id, alloc.gpu_indices, alloc.cpus, alloc.memory)
                    self.stopping[alloc.node].append(held)
                continue
            for alloc in job.allocations:
                self.holders[alloc.node].add(job.id)
            queue = self.queues.victim_queue(job) if self.queues is not None else None
            by_class_here = by_class and job.preemptible and not job.interactive
            if by_class_here or queue is not None:
                cls = (cfg.qos_level(job.qos), job.priority)
                end = end_of(job)  # as the state stores it (before now: released now)
                rank = (*cls, -(queue or 0), -job.start_time, -job.id)
                victims.append((job, _Victim(job, rank, end, queue)))
                self.top_queue = max(self.top_queue, queue or 0)
                if by_class_here:
                    low: tuple[float, int] | None = self.lowest_class
                    self.lowest_class = cls if low is None else min(low, cls)
        for job, victim in victims:
            for alloc in job.allocations:
                held = _Held(job.id, alloc.gpu_indices, alloc.cpus, alloc.memory)
                self.by_node[alloc.node].append((victim, held))
        for candidates in self.by_node.values():
            candidates.sort(key=lambda v: v[0].rank)

    @property
    def possible(self) -> bool:
        """Whether any job could still be preempted."""
        return bool(self.by_node)

    def plan(
        self, job: PendingJob, key: ConstraintKey, duration: float
    ) -> tuple[list[int], list[NodeState]] | None:
        """Victim ids and the nodes ``job`` will get once they stop; None if it would not fit."""
        cls = (self.cfg.qos_level(job.qos), job.priority)
        queue = self.queues.pending_queue(job) if self.queues is not None else self.top_queue
        by_class = self.lowest_class is not None and self.lowest_class < cls
        if not by_class and queue >= self.top_queue:
            return None  # no candidate this job may preempt
        memo = (cls, queue, key, job.nodes, job.exclusive, job.cpus, job.memory)
        if any(g <= job.gpus and d <= duration for g, d in self.failed.get(memo, ())):
            return None
        found = self._plan(job, key, duration, cls, queue)
        if found is None:
            self.failed.setdefault(memo, []).append((job.gpus, duration))
        return found

    def _plan(
        self,
        job: PendingJob,
        key: ConstraintKey,
        duration: float,
        cls: tuple[float, int],
        queue: int,
    ) -> tuple[list[int], list[NodeState]] | None:
        now = self.state.now
        scored: list[tuple[int, int, int, list[_Victim], NodeState]] = []
        for node in self.state.matching(job, key):
            chosen = self._victims_on(job, node, cls, queue)
            if chosen is None:
                continue
            need = node.total if job.exclusive else job.gpus
            if not self._window(node, chosen, need, now + duration, job.exclusive):
                continue
            lost = sum(len(a.gpu_indices) for v in chosen for a in v.job.allocations)
            scored.append((lost, len(chosen), node.idx, chosen, node))
        scored.sort(key=lambda s: s[:3])
        picked = same_alternative(job, scored, lambda s: s[4].view, lambda s: s[0])
        if picked is None:
            return None
        victims = {v.job.id: v for s in picked for v in s[3]}
        if not victims:
            return [], [s[4] for s in picked]
        for victim in victims.values():
            self.taken.add(victim.job.id)
            self.why[victim.job.id] = self._why(job, victim, cls)
            for alloc in victim.job.allocations:
                holder = self.state.by_name.get(alloc.node)
                if holder is not None:
                    self.state.preempt(holder, victim.job, victim.end, len(alloc.gpu_indices))
        return sorted(victims), [s[4] for s in picked]

    def _victims_on(
        self, job: PendingJob, node: NodeState, cls: tuple[float, int], queue: int
    ) -> list[_Victim] | None:
        """The fewest lowest-class victims after which ``job`` fits ``node``; None: never."""
        view = node.view
        allocatable = {g.index for g in view.gpus if g.allocatable}
        kinds = {g.index: (g.name, g.memory_total) for g in view.gpus}

        def suits(index: int) -> bool:
            return index in allocatable and gpu_ok(job, *kinds[index])

        room = _Room({g for g in node.free if suits(g)}, node.cpus, node.memory)
        for held in self.stopping.get(view.name, ()):
            room.add(held, suits)
        need = len(allocatable) if job.exclusive else job.gpus
        left = set(self.holders.get(view.name, ()))  # holders that would still run
        if job.exclusive:  # jobs placed in this pass that hold no GPU
            left.update(i for end, i in node.gpuless if end > self.state.now)
        chosen: list[_Victim] = []
        for victim, held in self.by_node.get(view.name, ()):
            short = self._short(job, room, need, left)
            if not short:
                break
            if victim.job.id in self.taken or not self._may(job, victim, cls, queue):
                continue
            if any(self._frees(held, what, suits) for what in short):
                chosen.append(victim)
                room.add(held, suits)
                left.discard(held.job_id)
        return None if self._short(job, room, need, left) else chosen

    def _may(self, job: PendingJob, victim: _Victim, cls: tuple[float, int], queue: int) -> bool:
        """Whether ``job`` (of class ``cls``, attained-service ``queue``) may preempt ``victim``."""
        if self.by_class and victim.job.preemptible and victim.rank[:2] < cls:
            return True
        q = self.queues
        return (
            q is not None
            and victim.queue is not None
            and q.allows(queue, job, victim.job, victim.queue)
        )

    def _why(self, job: PendingJob, victim: _Victim, cls: tuple[float, int]) -> str:
        if self.by_class and victim.job.preemptible and victim.rank[:2] < cls:
            return f"preempted for job {job.id} of a higher class (QoS, priority)"
        assert self.queues is not None
        return self.queues.why(job, victim.job)

    @staticmethod
    def _short(job: PendingJob, room: _Room, need: int, left: set[int]) -> list[str]:
        """What the node still lacks for ``job``: some of gpus, cpus, memory, holders."""
        short = []
        if len(room.gpus) < need:
            short.append("gpus")
        if job.cpus and room.cpus < job.cpus:
            short.append("cpus")
        if job.memory and room.memory < job.memory:
            short.append("memory")
        if job.exclusive and left:
            short.append("holders")
        return short

    @staticmethod
    def _frees(held: _Held, what: str, suits: Callable[[int], bool]) -> bool:
        if what == "gpus":
            return any(suits(g) for g in held.gpus)
        if what == "cpus":
            return held.cpus > 0
        if what == "memory":
            return held.memory > 0
        return True  # an exclusive job needs every holder gone

    def _window(
        self, node: NodeState, chosen: list[_Victim], need: int, end: float, exclusive: bool
    ) -> bool:
        now = self.state.now
        if node.claims:  # a claim other than the victims' keeps the job off meanwhile
            gone = {(-INF, v.end, True) for v in chosen if v.job.exclusive}
            claims = [c for c in node.claims if c not in gone]
            if any(s < end and now < e and (whole or exclusive) for s, e, whole in claims):
                return False
        changes = list(node.changes)
        for victim in chosen:
            gpus = sum(
                len(a.gpu_indices) for a in victim.job.allocations if a.node == node.view.name
            )
            if (victim.end, gpus) in changes:
                changes.remove((victim.end, gpus))
            changes.append((now, gpus))
        changes.sort()
        return window_ok(len(node.free), changes, need, now, end)
