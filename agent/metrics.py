"""The agent's optional Prometheus endpoint (``metrics_listen``; names in docs/metrics.md).

A custom collector reads, at scrape time, the agent's latest GPU readings, its inventory, the
container runtime's attempts and whether the link is up; ``MetricsServer`` serves it from its
own registry on prometheus-client's HTTP server, in threads beside the agent's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Protocol
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from rota.agent.readings import AgentReadings
from rota.gpus import GpuInfo
from rota.messages import RunningAttempt

log = logging.getLogger("rota.agent")
GPU_LABELS = ("node", "gpu", "uuid", "model")


class Containers(Protocol):
    """What the collector reads from the container runtime (``runtime.base.ContainerRuntime``)."""

    def attempts(self) -> list[RunningAttempt]: ...

    def gpu_jobs(self) -> dict[int, str]: ...


class AgentCollector(Collector):
    """Metric families of one agent: per GPU of ``gpus`` (the inventory) its latest reading,
    health, holder and foreign processes; per agent its containers and link."""

    def __init__(
        self,
        node: str,
        gpus: Sequence[GpuInfo],
        readings: AgentReadings,
        containers: Containers,
        connected: threading.Event,
    ) -> None:
        self.node = node
        self.gpus = tuple(gpus)
        self.readings = readings
        self.containers = containers
        self.connected = connected

    def collect(self) -> Iterator[Metric]:
        now = self.readings.now()
        samples = {s.index: s for s in now.gpus}
        holders = self.containers.gpu_jobs()

        def gauge(name: str, doc: str, labels: Sequence[str] = GPU_LABELS) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=labels)

        util = gauge("rota_agent_gpu_utilization_percent", "GPU utilisation at the last sample.")
        used = gauge("rota_agent_gpu_memory_used_bytes", "GPU memory used at the last sample.")
        total = gauge("rota_agent_gpu_memory_total_bytes", "GPU memory.")
        temp = gauge("rota_agent_gpu_temperature_celsius", "GPU temperature at the last sample.")
        power = gauge("rota_agent_gpu_power_watts", "GPU power draw at the last sample.")
        healthy = gauge("rota_agent_gpu_healthy", "1 when NVML read the GPU without error.")
        error = InfoMetricFamily(
            "rota_agent_gpu_error", "Why NVML could not read the GPU.", labels=GPU_LABELS
        )
        allocated = gauge(
            "rota_agent_gpu_allocated",
            "1 when a job's container holds the GPU; job is its id.",
            [*GPU_LABELS, "job"],
        )
        foreign = gauge(
            "rota_agent_gpu_foreign_processes", "Processes on the GPU that belong to no job."
        )
        for gpu in self.gpus:
            key = [self.node, str(gpu.index), gpu.uuid, gpu.name]
            total.add_metric(key, gpu.memory_total)
            job = holders.get(gpu.index, "")
            allocated.add_metric([*key, job], 1 if job else 0)
            sample = samples.get(gpu.index)
            if sample is None:
                continue  # not sampled yet
            healthy.add_metric(key, 0 if sample.error else 1)
            if sample.error:
                error.add_metric(key, {"error": sample.error})
                continue
            if sample.utilization is not None:
                util.add_metric(key, sample.utilization)
            used.add_metric(key, sample.memory_used)
            if sample.temperature is not None:
                temp.add_metric(key, sample.temperature)
            if sample.power:  # 0: NVML does not report power on this GPU
                power.add_metric(key, sample.power)
            foreign.add_metric(key, sum(1 for p in sample.processes if not p.job_id))
        yield from (util, used, total, temp, power, healthy, error, allocated, foreign)

        node = ("node",)
        running = gauge("rota_agent_containers_running", "Job containers running.", node)
        running.add_metric([self.node], sum(a.running for a in self.containers.attempts()))
        link = gauge("rota_agent_connected", "1 while the scheduler has welcomed the agent.", node)
        link.add_metric([self.node], 1 if self.connected.is_set() else 0)
        sampled = gauge(
            "rota_agent_gpu_sample_timestamp_seconds", "When the GPUs were last sampled.", node
        )
        if now.sampled_at:
            sampled.add_metric([self.node], now.sampled_at)
        beats = CounterMetricFamily(
            "rota_agent_heartbeats_sent", "Heartbeats sent to the scheduler.", labels=node
        )
        beats.add_metric([self.node], now.heartbeats_sent)
        again = CounterMetricFamily(
            "rota_agent_reconnects", "Streams welcomed after the first one.", labels=node
        )
        again.add_metric([self.node], now.reconnects)
        yield from (running, link, sampled, beats, again)


class MetricsServer:
    """Serves ``collector`` from a registry of its own on ``HOST:PORT``."""

    def __init__(self, collector: Collector) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self, address: str) -> int:
        """Listen on ``address`` and serve in a thread; the bound port (OSError: cannot bind)."""
        host, _, port = address.rpartition(":")
        self._server, self._thread = start_http_server(
            int(port), host.strip("[]"), registry=self.registry
        )
        return int(self._server.server_address[1])

    def stop(self) -> None:
        """Stop serving and close the socket (no-op when not started)."""
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = self._thread = None
