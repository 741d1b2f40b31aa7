"""protobuf conversion of nodes for clients (``ginfo``, the admin's node commands): node
messages, listing pages with their partitions, and the summary. Message parts that do not
change between listings are serialized once (``NodeParts``)."""

from __future__ import annotations

from collections.abc import Sequence

from rota.messages import GpuTelemetry, Inventory
from rota.scheduler.api.convert import inventory_to_pb
from rota.scheduler.cluster.gpus import GpuDisplay
from rota.scheduler.cluster.model import NodeState
from rota.scheduler.cluster.status import NodeStatus, free_gpus
from rota.scheduler.core.nodes import NodeSummary
from rota.scheduler.policy.partitions import PartitionTable
from rota.v1 import rota_pb2 as pb
from rota.wire import gpu_fields


def node_summary_to_pb(summary: NodeSummary) -> pb.NodeSummary:
    return pb.NodeSummary(
        nodes=summary.nodes,
        states=summary.states,
        gpus_total=summary.gpus_total,
        gpus_free=summary.gpus_free,
        gpus_unhealthy=summary.gpus_unhealthy,
    )


class NodeParts:
    """Parts of nodes' messages serialized once and reused: the inventory and each GPU's info
    while a node keeps the same inventory object (a hello replaces it), and each GPU's
    telemetry while it keeps the same telemetry tuple (each applied heartbeat replaces it).
    Safe to share between threads: a race at worst serializes a part twice. Holds one entry
    per node name ever listed (a few KiB each)."""

    def __init__(self) -> None:
        self._parts: dict[str, tuple[Inventory, bytes, dict[int, bytes]]] = {}
        self._telemetry: dict[str, tuple[tuple[GpuTelemetry, ...], dict[int, bytes]]] = {}

    def of(self, name: str, inventory: Inventory) -> tuple[bytes, dict[int, bytes]]:
        """The serialized inventory and each GPU's serialized info, by index."""
        hit = self._parts.get(name)
        if hit is None or hit[0] is not inventory:
            infos = {
                g.index: pb.GpuInfo(**gpu_fields(g)).SerializeToString() for g in inventory.gpus
            }
            hit = (inventory, inventory_to_pb(inventory).SerializeToString(), infos)
            self._parts[name] = hit
        return hit[1], hit[2]

    def telemetry(self, name: str, telemetry: tuple[GpuTelemetry, ...]) -> dict[int, bytes]:
        """Each GPU's serialized latest telemetry, by index."""
        hit = self._telemetry.get(name)
        if hit is None or hit[0] is not telemetry:
            hit = (telemetry, {t.index: _telemetry_bytes(t) for t in telemetry})
            self._telemetry[name] = hit
        return hit[1]


def _telemetry_bytes(t: GpuTelemetry) -> bytes:
    msg = pb.GpuTelemetry(
        index=t.index,
        uuid=t.uuid,
        utilization=t.utilization,
        memory_used=t.memory_used,
        temperature=t.temperature,
        power=t.power,
        error=t.error,
    )
    for p in t.processes:
        msg.processes.add(pid=p.pid, memory_used=p.memory_used, job_id=p.job_id)
    return msg.SerializeToString()


def node_page_to_pb(
    nodes: Sequence[tuple[NodeState, NodeStatus]], next_page_token: str, parts: NodeParts
) -> pb.ListNodesResponse:
    """A ``ListNodes`` reply holding ``nodes`` (~0.05-0.1 ms a node: servicers build a large
    page off the event loop); each node is written into the reply, not copied there."""
    reply = pb.ListNodesResponse(next_page_token=next_page_token)
    add = reply.nodes.add
    for node, status in nodes:
        _fill_node(add(), node, status, parts)
    return reply


def add_partitions(reply: pb.ListNodesResponse, table: PartitionTable) -> None:
    """The lab's partitions into ``reply``, and each listed node's partitions (in settings
    order) into its message."""
    for part in table.partitions:
        reply.partitions.add(
            name=part.name,
            is_default=part.default,
            default_time=part.default_time,
            max_time=part.max_time,
            default_gpus=part.default_gpus,
            max_gpus_per_job=part.max_gpus_per_job,
            priority_tier=part.priority_tier,
        )
    for msg in reply.nodes:
        member = table.of_node(msg.name, msg.labels)
        msg.partitions.extend(p.name for p in table.partitions if p.name in member)


def node_to_pb(node: NodeState, status: NodeStatus, parts: NodeParts | None = None) -> pb.Node:
    """A node for ``ginfo`` with every GPU's state, holder and latest telemetry; ``parts``
    caches what does not change between listings."""
    msg = pb.Node()
    _fill_node(msg, node, status, parts or NodeParts())
    return msg


def _fill_node(msg: pb.Node, node: NodeState, status: NodeStatus, parts: NodeParts) -> None:
    inventory, infos = parts.of(node.name, node.inventory)
    telemetry = parts.telemetry(node.name, node.telemetry)
    errors = {t.index: t.error for t in node.telemetry if t.error}
    holders, stale, shown = status.holders, status.stale, status.gpus
    msg.name = node.name
    msg.state = status.state
    msg.reason = status.reason
    msg.reason_by = status.reason_by
    msg.reason_time = status.since or 0.0
    msg.gpus_total = node.gpu_count
    msg.gpus_free = free_gpus(node, status)
    msg.last_heartbeat = node.last_heartbeat or 0.0
    msg.address = node.address
    msg.engine_healthy = node.engine_healthy
    msg.engine_error = node.engine_error
    msg.labels.update({**node.inventory.labels, **node.labels})
    msg.inventory.MergeFromString(inventory)
    sampled_at = node.telemetry_time or 0.0
    for gpu in node.inventory.gpus:
        reading = telemetry.get(gpu.index)
        holder = holders.get(gpu.index, "")
        view = shown.get(gpu.index)
        if view is None:  # no GPU status computed: judge from the telemetry alone
            error = errors.get(gpu.index, "")
            view = GpuDisplay(
                "unhealthy" if error else ("allocated" if holder else "idle"), error, holder
            )
        status_msg = msg.gpus.add(
            stale=stale,
            sampled_at=sampled_at,
            state=view.state,
            reason=view.reason,
            job_id=view.job_id,
            marked_by=view.marked_by,
            marked_time=view.marked_time,
        )
        status_msg.info.MergeFromString(infos[gpu.index])
        if reading is not None:
            status_msg.telemetry.MergeFromString(reading)
