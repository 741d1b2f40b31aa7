"""Does a job fit a node: now (free resources) and ever (total resources)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from rota.constraint import Constraint
from rota.scheduler.policy.counts import pick_counted
from rota.scheduler.policy.snapshot import NodeView, PendingJob, RunningJob

T = TypeVar("T")


class NodeFree:
    """Mutable free resources of one node during a pass."""

    __slots__ = ("cpus", "gpus", "memory", "node", "used")

    def __init__(self, node: NodeView) -> None:
        self.node = node
        self.gpus: list[int] = [g.index for g in node.gpus if g.allocatable]
        self.cpus = node.cpus
        self.memory = node.memory
        self.used = False  # any job holds something here (for exclusive jobs)

    def take(self, gpu_indices: Iterable[int], cpus: float, memory: int) -> None:
        """Remove resources that a running or newly placed job holds."""
        held = set(gpu_indices)
        self.gpus = [g for g in self.gpus if g not in held]
        self.cpus -= cpus
        self.memory -= memory
        self.used = True


def node_matches(job: PendingJob, node: NodeView) -> bool:
    """Static constraints: node names, partitions, labels, features, GPU type, GPU memory and totals
    (could it ever fit)."""
    if not named_ok(job, node.name):
        return False
    if job.partitions and node.partitions.isdisjoint(job.partitions):
        return False
    for key, value in job.node_selector.items():
        if node.labels.get(key) != value:
            return False
    if job.constraint is not None and not job.constraint.satisfied_by(node.features):
        return False
    gpus = [g for g in node.gpus if gpu_ok(job, g.name, g.memory_total)]
    if len(gpus) < job.gpus:
        return False
    if job.cpus and node.cpus and job.cpus > node.cpus:
        return False
    return not (job.memory and node.memory and job.memory > node.memory)


def same_alternative(
    job: PendingJob,
    candidates: Sequence[T],
    view: Callable[[T], NodeView],
    cost: Callable[[T], float] | None = None,
) -> list[T] | None:
    """The first ``job.nodes`` of ``candidates`` (each matching the job on its own), or None
    when there are too few. With a matching OR (``[a|b]``) in its constraint, all of them
    satisfy the same alternative: the first alternative (in the written order) that enough
    candidates satisfy, or with ``cost``, the one whose first nodes cost least in all. With
    counts (``[a*2&b*1]``), the first that meet them (``pick_counted``)."""
    if len(candidates) < job.nodes:
        return None
    if job.constraint is not None and job.constraint.counts:
        found = pick_counted(job.constraint, [view(c).features for c in candidates], job.nodes)
        return None if found is None else [candidates[i] for i in found]
    if job.constraint is None or not job.constraint.matching or job.nodes == 1:
        return list(candidates[: job.nodes])
    picked: dict[int, list[T]] = {}  # variant -> its first nodes
    masks = variant_masks(job.constraint, [view(c).features for c in candidates])
    for c, mask in zip(candidates, masks, strict=True):
        while mask:
            low = mask & -mask
            chosen = picked.setdefault(low.bit_length() - 1, [])
            if len(chosen) < job.nodes:
                chosen.append(c)
            mask ^= low
    best: list[T] | None = None
    for _, chosen in sorted(picked.items()):
        if len(chosen) < job.nodes:
            continue
        if cost is None:
            return chosen
        if best is None or sum(map(cost, chosen)) < sum(map(cost, best)):
            best = chosen
    return best


def variant_masks(constraint: Constraint, features: Sequence[frozenset[str]]) -> list[int]:
    """``constraint.variant_mask`` of each node's ``features``, worked out once per distinct
    set (nodes alike share theirs)."""
    known: dict[frozenset[str], int] = {}
    masks = []
    for f in features:
        mask = known.get(f)
        if mask is None:
            mask = known[f] = constraint.variant_mask(f)
        masks.append(mask)
    return masks


def holds(
    constraint: Constraint, features: frozenset[str], known: dict[frozenset[str], bool]
) -> bool:
    """Whether ``features`` satisfy ``constraint``, remembered in ``known`` (nodes alike share
    their answer)."""
    held = known.get(features)
    if held is None:
        held = known[features] = constraint.satisfied_by(features)
    return held


def named_ok(job: PendingJob, node: str) -> bool:
    """Whether the job's node list (when it has one) names ``node`` and its exclusions do
    not."""
    return (not job.nodelist or node in job.nodelist) and node not in job.exclude


def gpu_ok(job: PendingJob, name: str, memory_total: int) -> bool:
    """Whether one GPU suits the job's ``gpu_type`` (substring, any case) and ``gpu_memory``."""
    if job.gpu_type and job.gpu_type.lower() not in name.lower():
        return False
    return not (job.gpu_memory and memory_total < job.gpu_memory)


def fits_now(job: PendingJob, free: NodeFree) -> tuple[int, ...] | None:
    """GPU indices this job would get on this node now, or None if it does not fit."""
    node = free.node
    if not node.schedulable or not node_matches(job, node):
        return None
    if job.exclusive and free.used:
        return None
    if job.cpus and node.cpus and job.cpus > free.cpus:
        return None
    if job.memory and node.memory and job.memory > free.memory:
        return None
    by_index = {g.index: g for g in node.gpus}
    usable = [i for i in free.gpus if gpu_ok(job, by_index[i].name, by_index[i].memory_total)]
    if len(usable) < job.gpus:
        return None
    return tuple(sorted(usable)[: job.gpus])


def free_resources(nodes: Iterable[NodeView], running: Iterable[RunningJob]) -> dict[str, NodeFree]:
    """Free resources per node name after subtracting every running job's allocations."""
    free = {n.name: NodeFree(n) for n in nodes}
    for job in running:
        for alloc in job.allocations:
            if alloc.node in free:
                free[alloc.node].take(alloc.gpu_indices, alloc.cpus, alloc.memory)
    return free
