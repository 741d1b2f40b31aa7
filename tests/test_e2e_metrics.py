"""/metrics end to end: the scheduler's HTTP port serves Prometheus text that parses, and its
numbers move as a job starts and ends (a real agent on the fake NVML library)."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for
from tests.gpu_e2e import GpuCluster
from tests.nvml_fake import GiB, fake_gpu

JOB = f"""
name: metered
image: {TEST_IMAGE}
command: ["sleep", "600"]
resources: {{gpus: 1}}
"""


@pytest.fixture
def gc(cluster: Cluster, fake_nvml_lib: Path) -> GpuCluster:
    return GpuCluster(cluster, fake_nvml_lib)


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics by (name, sorted labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        assert reply.status == 200
        text = reply.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_parse_and_move_when_a_job_starts_and_ends(gc: GpuCluster) -> None:
    port = free_port()
    gc.start(
        [fake_gpu(0, utilization=64, memory_used=5 * GiB, temperature=55), fake_gpu(1)],
        gpu_dirty_memory="1Ti",
        http_listen=f"127.0.0.1:{port}",
    )
    node = gc.node_name
    gpu0 = (("gpu", "0"), ("node", node), ("uuid", fake_gpu(0)["uuid"]))
    before = wait_for(lambda: (m := scrape(port)).get(("rota_agents_connected", ())) == 1 and m, 20)
    assert before[("rota_node_gpus_idle", (("node", node),))] == 2
    assert before[("rota_node_gpus_allocated", (("node", node),))] == 0
    assert before[("rota_node_gpus_reserved", (("node", node),))] == 0
    assert before[("rota_jobs", (("state", "RUNNING"),))] == 0
    assert before[("rota_gpu_utilization_percent", gpu0)] == 64
    assert before[("rota_gpu_memory_used_bytes", gpu0)] == 5 * GiB
    assert before[("rota_gpu_memory_total_bytes", gpu0)] == 80 * GiB
    assert before[("rota_gpu_temperature_celsius", gpu0)] == 55

    job = gc.c.submit(JOB)
    gc.c.wait_state(job, "RUNNING")
    running = wait_for(  # the job runs until it is cancelled: a slow look still finds it
        lambda: (m := scrape(port)).get(("rota_jobs", (("state", "RUNNING"),))) == 1 and m, 30
    )
    assert running[("rota_node_gpus_allocated", (("node", node),))] == 1
    assert running[("rota_node_gpus_idle", (("node", node),))] == 1
    assert running[("rota_queue_wait_seconds_count", ())] == 1
    assert running[("rota_scheduling_pass_seconds_count", ())] >= 1
    submits = (
        "rota_rpc_requests_total",
        (("code", "OK"), ("method", "/rota.v1.JobService/SubmitJobs")),
    )
    assert running[submits] == 1

    gc.c.cli("gcancel", job, check=True)
    gc.c.wait_state(job, "CANCELLED")
    after = wait_for(
        lambda: (m := scrape(port)).get(("rota_jobs", (("state", "RUNNING"),))) == 0 and m, 30
    )
    assert after[("rota_node_gpus_allocated", (("node", node),))] == 0
    assert after[("rota_node_gpus_idle", (("node", node),))] == 2
    assert (
        after[("rota_scheduling_pass_seconds_count", ())]
        > running[("rota_scheduling_pass_seconds_count", ())]
    )
    bad = gc.c.cli("gcancel", "nonsense-id")
    assert bad.returncode != 0
    failed = wait_for(
        lambda: any(
            name == "rota_rpc_requests_total" and ("code", "INVALID_ARGUMENT") in labels
            for name, labels in scrape(port)
        ),
        10,
        what="a refused RPC counted with its code",
    )
    assert failed
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/nothing", timeout=10)
    assert missing.value.code == 404
