"""Cell helpers for the reservation gate (``reserve.py``): masks that keep some GPUs from a
sub-pass, the free-GPU fit test and the time-limit clip. Pure functions of snapshot views."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.fit import gpu_ok, node_matches
from rota.scheduler.policy.snapshot import GpuView, NodeView, PendingJob

Cell = tuple[str, int]  # (node name, GPU index)


def free_until(start: float, until: dict[Cell, float]) -> Callable[[Cell], bool]:
    """GPUs of upcoming windows that no window holds before ``start``."""
    return lambda c: until.get(c, -1.0) >= start


def fits_free(job: PendingJob, nodes: Iterable[NodeView], held: set[Cell]) -> bool:
    """Whether ``job``'s GPUs are free now on enough nodes, reserved GPUs counted."""
    count = 0
    for node in nodes:
        if not node.schedulable or not node_matches(job, node):
            continue
        free = sum(
            1
            for g in node.gpus
            if g.allocatable
            and (node.name, g.index) not in held
            and gpu_ok(job, g.name, g.memory_total)
        )
        count += free >= job.gpus
    return count >= job.nodes


def clip(job: PendingJob, left: float, cfg: PolicyConfig) -> PendingJob:
    """The job with its time limit cut to the ``left`` seconds of its window."""
    limit = cfg.limit_of(job.time_limit)
    return job if limit <= left else dataclasses.replace(job, time_limit=left)


def mask(node: NodeView, usable: Callable[[Cell], bool]) -> NodeView:
    """``node`` with the GPUs ``usable`` rejects made not allocatable (the same object when
    none is)."""
    name = node.name
    if all(usable((name, g.index)) or not g.allocatable for g in node.gpus):
        return node
    return dataclasses.replace(
        node,
        gpus=tuple(
            g if not g.allocatable or usable((name, g.index)) else _closed(g) for g in node.gpus
        ),
    )


def _closed(gpu: GpuView) -> GpuView:
    return dataclasses.replace(gpu, allocatable=False)
