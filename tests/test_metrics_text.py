"""The scheduler's /metrics text: per-node and per-GPU series are written directly (a large
cluster's scrape would take seconds through the generic collector); Prometheus's own parser must
read them back with every label and value."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from rota.gpus import GpuInfo
from rota.messages import GpuTelemetry
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
