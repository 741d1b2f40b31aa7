"""How a node is shown: its SLURM-style state, reason, which job holds each GPU, staleness."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from rota.scheduler.cluster.gpus import GpuDisplay
from rota.scheduler.cluster.model import AdminState, JobRecord, NodeState

NODE_STATES = ("IDLE", "MIXED", "ALLOCATED", "DRAINING", "DRAINED", "DOWN")
"""Every state ``node_status`` gives, in ``ginfo``'s order."""


@dataclass(frozen=True, slots=True)
class NodeStatus:
    state: str  # IDLE MIXED ALLOCATED DRAINING DRAINED DOWN
    reason: str
    holders: dict[int, str]  # GPU index -> display id of the job holding it
    stale: bool  # telemetry older than the stale window
    reason_by: str = ""  # who set the state (drains: the admin)
    since: float | None = None  # when the state's reason was set
    gpus: Mapping[int, GpuDisplay] = field(default_factory=dict)  # per GPU index (cluster.gpus)


FREE_STATES = frozenset({"IDLE", "MIXED"})
"""Node states whose GPUs may count free; a draining, drained or DOWN node has none."""


def free_gpus(node: NodeState, status: NodeStatus, maint: Collection[int] = ()) -> int:
    """GPUs of ``node`` a job could get now: the node in service (``FREE_STATES``), the GPU
    held by no job, allocatable and not under an open MAINT window (``maint``: indices). The
    count ``ginfo``, ``ginfo -s`` and the web's overview show."""
    if status.state not in FREE_STATES:
        return 0
    shown = status.gpus
    return sum(
        1
        for g in node.inventory.gpus
        if g.index not in status.holders
        and g.index not in maint
        and (g.index not in shown or shown[g.index].allocatable)
    )


def node_status(
    node: NodeState, active: Iterable[JobRecord], now: float, stale_after: float
) -> NodeStatus:
    """Derive the displayed state of ``node`` from its connection, admin state and jobs."""
    holders: dict[int, str] = {}
    busy = False
    for job in active:
        for alloc in job.allocation:
            if alloc.node == node.name:
                busy = True
                holders.update(dict.fromkeys(alloc.gpus, job.display_id))
    stale = node.telemetry_time is None or now - node.telemetry_time > stale_after
    if not node.connected:
        reason = "agent not connected"
        if node.admin_state is AdminState.DRAIN:
            reason += f"; drained: {node.reason}"
        return NodeStatus("DOWN", reason, holders, True, node.reason_by, node.down_since)
    if node.admin_state is AdminState.DRAIN:
        state = "DRAINING" if busy else "DRAINED"
        return NodeStatus(state, node.reason, holders, stale, node.reason_by, node.reason_time)
    if not node.engine_healthy:
        return NodeStatus(
            "DOWN", f"container engine unhealthy: {node.engine_error}", holders, stale
        )
    total = node.gpu_count
    if not busy:
        state = "IDLE"
    elif total and len(holders) >= total:
        state = "ALLOCATED"
    else:
        state = "MIXED" if total else "ALLOCATED"
    return NodeStatus(state, "", holders, stale)
