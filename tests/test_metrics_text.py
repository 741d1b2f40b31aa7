"""The scheduler's /metrics text: per-node and per-GPU series are written directly (a large
cluster's scrape would take seconds through the generic collector); Prometheus's own parser must
read them back with every label and value."""

from __future__ import annotations

import asyncio
import threading

from prometheus_client.parser import text_string_to_metric_families

from rota.gpus import GpuInfo
from rota.messages import GpuTelemetry
from rota.scheduler.daemon import _scrape
from rota.scheduler.metrics import SchedulerMetrics
from rota.scheduler.metrics_sample import ClusterSample, NodeSample


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_per_node_and_per_gpu_series_parse_back_with_escaped_labels() -> None:
    odd = 'rack "b"\\n1\nx'  # a quote, a backslash and a newline: all must be escaped
    inventory = (GpuInfo(0, "GPU-a", "A100", 80 * 2**30), GpuInfo(1, "GPU-b", "A100", 40 * 2**30))
    telemetry = (
        GpuTelemetry(0, "GPU-a", utilization=55.5, memory_used=2**33, temperature=61.0),
        GpuTelemetry(1, "GPU-b", error="GPU is lost"),  # a failed reading shows no series
    )
    cluster = ClusterSample(
        {"RUNNING": 1},
        (
            NodeSample("gpu01", True, 2, 1, 1, 0, inventory, telemetry),
            NodeSample(odd, False, 8, 3, 0, 2),
        ),
    )
    got = samples(SchedulerMetrics().render(cluster).decode())

    def node(kind: str, name: str) -> float:
        return got[(f"rota_node_gpus_{kind}", (("node", name),))]

    assert [node(k, "gpu01") for k in ("total", "allocated", "idle", "unhealthy")] == [2, 1, 0, 1]
    assert [node(k, odd) for k in ("total", "allocated", "idle", "reserved")] == [8, 3, 5, 2]
    gpu0 = (("gpu", "0"), ("node", "gpu01"), ("uuid", "GPU-a"))
    assert got[("rota_gpu_utilization_percent", gpu0)] == 55.5
    assert got[("rota_gpu_memory_used_bytes", gpu0)] == 2**33
    assert got[("rota_gpu_memory_total_bytes", gpu0)] == 80 * 2**30
    assert got[("rota_gpu_temperature_celsius", gpu0)] == 61.0
    assert not [key for key in got if ("uuid", "GPU-b") in key[1]]
    assert got[("rota_jobs", (("state", "RUNNING"),))] == 1


def cluster_of(nodes: int) -> ClusterSample:
    inventory = tuple(GpuInfo(i, f"GPU-{i}", "H100", 80 * 2**30) for i in range(8))
    return ClusterSample(
        {"RUNNING": 0},
        tuple(
            NodeSample(
                f"n{n:05d}",
                True,
                8,
                n % 9,
                0,
                0,
                inventory,
                tuple(
                    GpuTelemetry(i, f"GPU-{n}-{i}", utilization=float(n % 101)) for i in range(8)
                ),
            )
            for n in range(nodes)
        ),
    )


def test_a_large_cluster_s_text_holds_every_node_and_gpu_series() -> None:
    nodes = 700
    got = samples(SchedulerMetrics().render(cluster_of(nodes)).decode())
    assert got[("rota_node_gpus_allocated", (("node", "n00600"),))] == 600 % 9
    assert got[("rota_node_gpus_idle", (("node", "n00600"),))] == 8 - 600 % 9
    gpu = (("gpu", "5"), ("node", f"n{nodes - 1:05d}"), ("uuid", f"GPU-{nodes - 1}-5"))
    assert got[("rota_gpu_utilization_percent", gpu)] == (nodes - 1) % 101
    assert got[("rota_gpu_memory_total_bytes", gpu)] == 80 * 2**30
    assert len([k for k in got if k[0] == "rota_gpu_memory_total_bytes"]) == nodes * 8


def test_the_daemon_serves_other_requests_while_it_renders_a_scrape() -> None:
    """The render waits until another coroutine has run while it is under way: on the event
    loop that could never happen (the wait would time out), in a thread it happens at once."""
    cluster = cluster_of(500)
    rendering, served = threading.Event(), threading.Event()
    seen: list[bool] = []  # per render: whether the loop ran other work while it waited

    class WatchedMetrics(SchedulerMetrics):
        def render(self, sample: ClusterSample) -> bytes:
            rendering.set()
            seen.append(served.wait(5))
            return super().render(sample)

    metrics = WatchedMetrics()

    class Engine:
        async def metrics_sample(self) -> ClusterSample:
            return cluster

    async def scrape_beside_a_request() -> bytes:
        async def other_request() -> None:
            while not rendering.is_set():
                await asyncio.sleep(0)
            served.set()  # a turn of the loop while the render is under way

        beside = asyncio.create_task(other_request())
        response = await _scrape(Engine(), metrics)  # type: ignore[arg-type]
        await beside
        return response.body

    body = asyncio.run(scrape_beside_a_request())
    assert seen == [True]
    assert body == metrics.render(cluster)
