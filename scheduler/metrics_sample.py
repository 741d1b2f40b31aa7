"""What ``/metrics`` shows of the cluster model, read on the core thread at scrape time."""

from __future__ import annotations

from collections import Counter as Tally
from dataclasses import dataclass, field

from rota.gpus import GpuInfo
from rota.messages import GpuTelemetry
from rota.scheduler.core.services import Services
from rota.states import JobState


@dataclass(frozen=True, slots=True)
class NodeSample:
    node: str
    connected: bool
    gpus: int
    allocated: int
    unhealthy: int
    reserved: int = 0  # GPUs of an open reservation now
    inventory: tuple[GpuInfo, ...] = ()  # the model's own (immutable) tuples: no copy
    telemetry: tuple[GpuTelemetry, ...] = ()


@dataclass(frozen=True, slots=True)
class TelemetrySample:
    """The heartbeat path at one moment (the engine's, not the model's): telemetry shed since
    start because the core thread fell behind, heartbeats waiting to be applied, and the
    telemetry period agents are told."""

    shed: int = 0
    waiting: int = 0
    period: float = 0.0


@dataclass(frozen=True, slots=True)
class ClusterSample:
    """What the model showed at one moment."""

    jobs: dict[str, int] = field(default_factory=dict)  # every non-final state -> count
    nodes: tuple[NodeSample, ...] = ()
    telemetry: TelemetrySample = TelemetrySample()


def sample(services: Services) -> ClusterSample:
    """Read the model (call on the core thread): O(jobs + nodes), no per-GPU work."""
    model = services.model
    jobs = Tally(j.state.value for j in model.jobs.values())
    held: dict[str, set[int]] = {}
    for job in model.jobs.values():
        if job.state.active:
            for alloc in job.allocation:
                held.setdefault(alloc.node, set()).update(alloc.gpus)
    reserved = services.reservations.reserved_now()
    nodes: list[NodeSample] = []
    for name in sorted(model.nodes):
        node = model.nodes[name]
        marks = services.gpus.marks.get(name) or {}
        nodes.append(
            NodeSample(
                name,
                node.connected,
                node.gpu_count,
                len(held.get(name, ())),
                len(marks),
                reserved.get(name, 0),
                node.inventory.gpus,
                node.telemetry,
            )
        )
    live = {s.value: 0 for s in JobState if not s.terminal} | dict(jobs)
    return ClusterSample(live, tuple(nodes))
