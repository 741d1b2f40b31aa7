"""Prometheus metrics of the scheduler (names and labels in docs/metrics.md).

State (jobs, GPUs, telemetry, agents) is read from the cluster model at scrape time, on the
core thread, into a ``ClusterSample``; a custom collector turns the cluster-wide part of that
sample into metric families, and the per-node and per-GPU series are written directly. Events
(passes, queue waits, RPCs) feed histograms and counters. Everything lives in one
``SchedulerMetrics`` object with a registry of its own: no module-level state.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from rota.scheduler.metrics_sample import ClusterSample, NodeSample

QUEUE_WAIT_BUCKETS = (1, 5, 15, 60, 300, 900, 1800, 3600, 3 * 3600, 12 * 3600, 86400, float("inf"))
PASS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, float("inf"))
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _ModelCollector(Collector):
    """Metric families of the latest ``ClusterSample``."""

    def __init__(self) -> None:
        self.sample = ClusterSample()

    def collect(self) -> Iterator[Metric]:
        s = self.sample
        jobs = GaugeMetricFamily("rota_jobs", "Live jobs by state.", labels=["state"])
        for state, count in sorted(s.jobs.items()):
            jobs.add_metric([state], count)
        yield jobs
        agents = GaugeMetricFamily("rota_agents_connected", "Nodes whose agent is connected.")
        agents.add_metric([], sum(n.connected for n in s.nodes))
        yield agents
        shed = CounterMetricFamily(
            "rota_telemetry_shed",
            "Heartbeats whose telemetry was dropped unapplied (a newer one of the node replaced "
            "it) because the scheduler fell behind; liveness and job events are never shed.",
        )
        shed.add_metric([], s.telemetry.shed)
        waiting = GaugeMetricFamily(
            "rota_telemetry_waiting", "Heartbeats received whose telemetry is not applied yet."
        )
        waiting.add_metric([], s.telemetry.waiting)
        period = GaugeMetricFamily(
            "rota_telemetry_period_seconds",
            "How often each agent is told to send telemetry (nodes / max_telemetry_rate, at "
            "least heartbeat_interval).",
        )
        period.add_metric([], s.telemetry.period)
        yield from (shed, waiting, period)


_NODE_KINDS = ("total", "allocated", "idle", "unhealthy", "reserved")
_GPU_FAMILIES = (
    ("rota_gpu_utilization_percent", "GPU utilisation at the last heartbeat."),
    ("rota_gpu_memory_used_bytes", "GPU memory used at the last heartbeat."),
    ("rota_gpu_memory_total_bytes", "GPU memory."),
    ("rota_gpu_temperature_celsius", "GPU temperature at the last heartbeat."),
)
_GpuRow = tuple[str, tuple[str, str, str, str]]  # label set, values in _GPU_FAMILIES order


def _label(value: str) -> str:
    """A label value escaped as the text exposition format requires."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float | None) -> str:
    """A sample value as Prometheus reads it: integers exactly, floats by ``repr``; None (no
    reading) is NaN."""
    if value is None:
        return "NaN"
    return str(value) if math.isfinite(value) else floatToGoString(value)


def _node_values(n: NodeSample) -> tuple[int, ...]:
    """The node's GPUs in ``_NODE_KINDS`` order."""
    return (
        n.gpus,
        n.allocated,
        max(0, n.gpus - n.allocated - n.unhealthy),
        n.unhealthy,
        n.reserved,
    )


def _gpu_rows(nodes: Sequence[NodeSample]) -> list[_GpuRow]:
    """Per GPU whose latest reading succeeded: its label set, then its values in
    ``_GPU_FAMILIES`` order, already formatted."""
    rows: list[_GpuRow] = []
    for node in nodes:
        label = _label(node.node)
        totals = {g.index: g.memory_total for g in node.inventory}
        for t in node.telemetry:
            if not t.error:
                rows.append(
                    (
                        f'{{gpu="{t.index}",node="{label}",uuid="{_label(t.uuid)}"}} ',
                        (
                            _number(t.utilization),
                            _number(t.memory_used),
                            _number(totals.get(t.index, 0)),
                            _number(t.temperature),
                        ),
                    )
                )
    return rows


def _per_node_and_gpu(sample: ClusterSample) -> str:
    """The per-node and per-GPU gauge families as exposition text: written directly, not
    through the generic collector, whose per-line cost (~15 us) would make a 10,000-node
    scrape take seconds; each GPU's values are formatted once, not once per family."""
    out: list[str] = []
    nodes = [(_label(n.node), _node_values(n)) for n in sample.nodes]
    for k, kind in enumerate(_NODE_KINDS):
        name = f"rota_node_gpus_{kind}"
        out.append(f"# HELP {name} GPUs of the node that are {kind}.\n# TYPE {name} gauge\n")
        out.extend(f'{name}{{node="{label}"}} {values[k]}\n' for label, values in nodes)
    rows = _gpu_rows(sample.nodes)
    for k, (name, help_text) in enumerate(_GPU_FAMILIES):
        out.append(f"# HELP {name} {help_text}\n# TYPE {name} gauge\n")
        out.extend(f"{name}{key}{values[k]}\n" for key, values in rows)
    return "".join(out)


class SchedulerMetrics:
    """The scheduler's registry: the model collector, pass and queue-wait histograms, RPC
    counts and latencies. ``pass_done`` makes it the engine's pass observer."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._model = _ModelCollector()
        self._rendering = threading.Lock()  # one render at a time: they share the collector
        self.registry.register(self._model)
        self.pass_seconds = Histogram(
            "rota_scheduling_pass_seconds",
            "Duration of a scheduling pass (snapshot, decide, apply).",
            buckets=PASS_BUCKETS,
            registry=self.registry,
        )
        self.queue_wait = Histogram(
            "rota_queue_wait_seconds",
            "Time from submission to launch of each launched job.",
            buckets=QUEUE_WAIT_BUCKETS,
            registry=self.registry,
        )
        self.rpcs = Counter(
            "rota_rpc_requests",
            "RPCs answered, by method and status code.",
            ["method", "code"],
            registry=self.registry,
        )
        self.rpc_seconds = Histogram(
            "rota_rpc_duration_seconds",
            "Time to answer an RPC, by method.",
            ["method"],
            registry=self.registry,
        )

    def pass_done(self, seconds: float, queue_waits: Sequence[float]) -> None:
        self.pass_seconds.observe(seconds)
        for wait in queue_waits:
            self.queue_wait.observe(max(0.0, wait))

    def rpc_done(self, method: str, code: str, seconds: float) -> None:
        self.rpcs.labels(method, code).inc()
        self.rpc_seconds.labels(method).observe(seconds)

    def render(self, cluster: ClusterSample) -> bytes:
        """The exposition text with ``cluster`` as the model's state. Thread-safe: a large
        cluster's text takes long enough (~0.45 s at 10,000 nodes) that the daemon renders
        it off the event loop."""
        with self._rendering:
            self._model.sample = cluster
            return generate_latest(self.registry) + _per_node_and_gpu(cluster).encode()
