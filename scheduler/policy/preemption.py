"""Choose running jobs to preempt for a blocked job, only when the job then fits.

A pending job may preempt a running job that is ``preemptible``, not already stopping, and of
a lower class: class is (QoS level, job priority). Victims on a node are taken lowest class
first, most recently started first, until the node has the GPUs (GPUs of stopping jobs count
as free); the nodes needing the fewest preempted GPUs win. The job is not placed in the same
pass: its GPUs are reserved from now on, and the daemon places it once the victims are gone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.snapshot import PendingJob, RunningJob
from rota.scheduler.policy.state import ClusterState, ConstraintKey, NodeState, window_ok


@dataclass(frozen=True, slots=True)
class _Victim:
    job: RunningJob
    rank: tuple[float, int, float, int]  # class, then most recent first
    end: float  # when the profile expects it to release its GPUs


class Preemptor:
    """Preemption planning over one pass (victims are taken at most once)."""

    def __init__(
        self,
        state: ClusterState,
        running: tuple[RunningJob, ...],
        cfg: PolicyConfig,
        end_of: Callable[[RunningJob], float],
    ) -> None:
        self.state = state
        self.cfg = cfg
        self.by_node: defaultdict[str, list[tuple[_Victim, int]]] = defaultdict(list)
        self.taken: set[int] = set()
        for job in running:
            if not job.preemptible or job.stopping:
                continue
            cls = (cfg.qos_level(job.qos), job.priority)
            end = end_of(job)  # as the state stores it (before now: released now)
            victim = _Victim(job, (*cls, -job.start_time, -job.id), end)
            for alloc in job.allocations:
                self.by_node[alloc.node].append((victim, len(alloc.gpu_indices)))
        for victims in self.by_node.values():
            victims.sort(key=lambda v: v[0].rank)

    @property
    def possible(self) -> bool:
        """Whether any job could still be preempted."""
        return bool(self.by_node)

    def plan(
        self, job: PendingJob, key: ConstraintKey, duration: float
    ) -> tuple[list[int], list[NodeState]] | None:
        """Victim ids and the nodes ``job`` will get once they stop; None if it would not fit."""
        cls = (self.cfg.qos_level(job.qos), job.priority)
        now = self.state.now
        scored: list[tuple[int, int, int, list[_Victim], NodeState]] = []
        for node in self.state.matching(job, key):
            need = node.total if job.exclusive else job.gpus
            have = len(node.free) + node.stopping
            chosen: list[_Victim] = []
            for victim, gpus in self.by_node.get(node.view.name, ()):
                if have >= need:
                    break
                if victim.job.id in self.taken or victim.rank[:2] >= cls:
                    continue
                chosen.append(victim)
                have += gpus
            if have < need or not self._window(node, chosen, need, now + duration):
                continue
            lost = sum(len(a.gpu_indices) for v in chosen for a in v.job.allocations)
            scored.append((lost, len(chosen), node.idx, chosen, node))
        if len(scored) < job.nodes:
            return None
        scored.sort(key=lambda s: s[:3])
        picked = scored[: job.nodes]
        victims = {v.job.id: v for s in picked for v in s[3]}
        if not victims:
            return [], [s[4] for s in picked]
        for victim in victims.values():
            self.taken.add(victim.job.id)
            for alloc in victim.job.allocations:
                holder = self.state.by_name.get(alloc.node)
                if holder is not None:
                    self.state.move_release(holder, victim.end, now, len(alloc.gpu_indices))
        return sorted(victims), [s[4] for s in picked]

    def _window(self, node: NodeState, chosen: list[_Victim], need: int, end: float) -> bool:
        changes = list(node.changes)
        now = self.state.now
        for victim in chosen:
            gpus = sum(
                len(a.gpu_indices) for a in victim.job.allocations if a.node == node.view.name
            )
            if (victim.end, gpus) in changes:
                changes.remove((victim.end, gpus))
            changes.append((now, gpus))
        changes.sort()
        return window_ok(len(node.free), changes, need, now, end)
