"""Builders for policy tests: small, explicit snapshots."""

from __future__ import annotations

from typing import Any

from rota.scheduler.policy import make_policy
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.snapshot import (
    Allocation,
    GpuView,
    NodeView,
    PendingJob,
    Plan,
    RunningJob,
    Snapshot,
)

GIB = 1024**3
HOUR = 3600.0


def make_node(
    name: str = "n0",
    gpus: int = 8,
    *,
    gpu_name: str = "NVIDIA A100-SXM4-80GB",
    gpu_memory: int = 80 * GIB,
    **kw: Any,
) -> NodeView:
    return NodeView(name, tuple(GpuView(i, gpu_name, gpu_memory) for i in range(gpus)), **kw)


def make_nodes(count: int, gpus: int = 8, **kw: Any) -> tuple[NodeView, ...]:
    return tuple(make_node(f"n{i}", gpus, **kw) for i in range(count))


def make_job(
    id: int = 1,
    gpus: int = 1,
    *,
    user: str = "alice",
    account: str = "lab",
    submit: float = 0.0,
    time_limit: float = HOUR,
    **kw: Any,
) -> PendingJob:
    return PendingJob(id, user, account, submit, time_limit, gpus=gpus, **kw)


def make_running(
    id: int,
    node: str = "n0",
    gpus: tuple[int, ...] = (0,),
    *,
    user: str = "bob",
    account: str = "lab",
    start: float = 0.0,
    time_limit: float = HOUR,
    **kw: Any,
) -> RunningJob:
    return RunningJob(id, user, account, (Allocation(node, gpus),), start, time_limit, **kw)


def make_snapshot(
    nodes: tuple[NodeView, ...],
    pending: tuple[PendingJob, ...] = (),
    running: tuple[RunningJob, ...] = (),
    *,
    now: float = 0.0,
    config: PolicyConfig | None = None,
    **kw: Any,
) -> Snapshot:
    return Snapshot(now, nodes, pending, running, config=config or PolicyConfig(), **kw)


def plan_of(snapshot: Snapshot, policy: str = "rota") -> Plan:
    return make_policy(policy, snapshot.config).decide(snapshot)


def placed(plan: Plan) -> dict[int, list[tuple[str, tuple[int, ...]]]]:
    """job id -> [(node, gpu indices)] of a plan's placements."""
    return {p.job_id: [(a.node, a.gpu_indices) for a in p.allocations] for p in plan.placements}
