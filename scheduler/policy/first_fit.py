"""First-fit policy: jobs in submission order, each on the first node where it fits now."""

from __future__ import annotations

from rota.scheduler.policy import reasons
from rota.scheduler.policy.base import PolicyBase
from rota.scheduler.policy.fit import fits_now, free_resources, node_matches, same_alternative
from rota.scheduler.policy.snapshot import Allocation, PendingJob, Placement, Plan, Snapshot


class FirstFitPolicy(PolicyBase):
    """Jobs in submission order, each on the first node where it fits now; keeps no caches."""

    name = "first-fit"

    def order(self, snapshot: Snapshot) -> list[PendingJob]:
        return sorted(snapshot.pending, key=lambda j: (j.submit_time, j.id))

    def decide(self, snapshot: Snapshot) -> Plan:
        """Place pending jobs first-come first-served; a job that does not fit blocks none
        behind it. Gang jobs (``nodes > 1``) take ``nodes`` distinct nodes or none."""
        return _first_fit(snapshot, self.order(snapshot))


def _first_fit(snapshot: Snapshot, order: list[PendingJob]) -> Plan:
    free = free_resources(snapshot.nodes, snapshot.running)
    placements: list[Placement] = []
    why: dict[int, str] = {}
    for job in order:
        if job.blocked is not None:
            why[job.id] = job.blocked
            continue
        fitting: list[Allocation] = []
        every = job.constraint is not None and (  # [a|b] or counts: pick after
            job.constraint.matching or bool(job.constraint.counts)
        )
        for node_free in free.values():
            indices = fits_now(job, node_free)
            if indices is not None:
                fitting.append(Allocation(node_free.node.name, indices, job.cpus, job.memory))
                if len(fitting) == job.nodes and not every:
                    break
        chosen = same_alternative(job, fitting, lambda a: free[a.node].node)
        if chosen is None:
            capable = [n for n in snapshot.nodes if node_matches(job, n)]
            up = [n for n in capable if n.schedulable]
            why[job.id] = reasons.NODE_DOWN if capable and not up else reasons.RESOURCES
            continue
        for alloc in chosen:
            free[alloc.node].take(alloc.gpu_indices, alloc.cpus, alloc.memory)
        placements.append(Placement(job.id, tuple(chosen)))
    return Plan(placements=tuple(placements), reasons=why)
