"""The agent's optional /metrics end to end: a real agent on the fake NVML library serves its
GPU readings, which GPU a running job holds, and its link to a real scheduler; the setting is
off by default and only a loopback address is accepted unless the config file says otherwise."""

from __future__ import annotations

import signal
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rota.agent.config import load_agent_config
from rota.cli.rota_main import main
from rota.settings import SettingsError
from tests.cluster import Cluster, free_port, wait_for
from tests.gpu_e2e import SLEEPER, GpuCluster
from tests.nvml_fake import GiB, fake_gpu

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
STRANGER = {"pid": 4_000_000, "used_memory": 5 * GiB}  # no such pid: belongs to no job


@pytest.fixture
def gc(cluster: Cluster, fake_nvml_lib: Path) -> GpuCluster:
    return GpuCluster(cluster, fake_nvml_lib)


def scrape(port: int) -> Samples:
    """Every sample of the agent's /metrics by (name, sorted labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        assert reply.status == 200
        text = reply.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_agent_metrics_show_nvml_readings_jobs_and_the_link(gc: GpuCluster) -> None:
    port = free_port()
    fake = [
        fake_gpu(
            0,
            utilization=64,
            memory_used=5 * GiB,
            temperature=55,
            power_mw=123_000,
            processes=[STRANGER],
        ),
        fake_gpu(1, name="NVIDIA H100 80GB HBM3", temperature=41),
        fake_gpu(2),
    ]
    gc.start(fake, "--metrics-listen", f"127.0.0.1:{port}", gpu_dirty_memory="1Ti")
    node = gc.node_name

    def gpu(index: int, **extra: str) -> tuple[tuple[str, str], ...]:
        labels = {
            "node": node,
            "gpu": str(index),
            "uuid": fake[index]["uuid"],
            "model": fake[index]["name"],
            **extra,
        }
        return tuple(sorted(labels.items()))

    agent = (("node", node),)
    m = wait_for(
        lambda: (m := scrape(port)).get(("rota_agent_heartbeats_sent_total", agent), 0) >= 1 and m,
        20,
        what="a heartbeat counted",
    )
    assert m[("rota_agent_connected", agent)] == 1
    assert m[("rota_agent_reconnects_total", agent)] == 0
    assert m[("rota_agent_containers_running", agent)] == 0
    assert m[("rota_agent_gpu_utilization_percent", gpu(0))] == 64
    assert m[("rota_agent_gpu_memory_used_bytes", gpu(0))] == 5 * GiB
    assert m[("rota_agent_gpu_memory_total_bytes", gpu(0))] == 80 * GiB
    assert m[("rota_agent_gpu_temperature_celsius", gpu(0))] == 55
    assert m[("rota_agent_gpu_power_watts", gpu(0))] == 123
    assert m[("rota_agent_gpu_foreign_processes", gpu(0))] == 1
    assert m[("rota_agent_gpu_temperature_celsius", gpu(1))] == 41
    assert m[("rota_agent_gpu_foreign_processes", gpu(1))] == 0
    assert [m[("rota_agent_gpu_healthy", gpu(i))] for i in range(3)] == [1, 1, 1]
    assert not [name for name, _ in m if name == "rota_agent_gpu_error_info"]
    assert all(m[("rota_agent_gpu_allocated", gpu(i, job=""))] == 0 for i in range(3))

    gc.change(2, error=True)  # NVML starts failing on GPU 2
    m = wait_for(
        lambda: (m := scrape(port))[("rota_agent_gpu_healthy", gpu(2))] == 0 and m,
        10,
        what="GPU 2 unhealthy",
    )
    errors = [dict(labels) for name, labels in m if name == "rota_agent_gpu_error_info"]
    assert [(e["gpu"], e["uuid"]) for e in errors] == [("2", fake[2]["uuid"])]
    assert "NVML error" in errors[0]["error"]
    assert ("rota_agent_gpu_utilization_percent", gpu(2)) not in m, "no reading of a failing GPU"
    gc.wait_gpu(2, "unhealthy")

    # GPU 0 runs a stranger and GPU 2 fails: the job gets GPU 1, and /metrics says so
    job = gc.c.submit(SLEEPER)
    gc.c.wait_state(job, "RUNNING")
    assert gc.gpu_ids(job) == [1]
    m = wait_for(
        lambda: (m := scrape(port)).get(("rota_agent_gpu_allocated", gpu(1, job=job))) == 1 and m,
        10,
        what=f"GPU 1 allocated to job {job}",
    )
    assert m[("rota_agent_containers_running", agent)] == 1
    assert m[("rota_agent_gpu_allocated", gpu(0, job=""))] == 0
    # the job's own process on its GPU is not foreign
    pid = gc.container_pid(job)
    gc.change(1, memory_used=GiB, processes=[{"pid": pid, "used_memory": GiB}])
    wait_for(
        lambda: scrape(port).get(("rota_agent_gpu_memory_used_bytes", gpu(1))) == GiB,
        10,
        what="GPU 1 memory read",
    )
    assert scrape(port)[("rota_agent_gpu_foreign_processes", gpu(1))] == 0

    # while the scheduler is away the readings stay fresh; its return counts as a reconnect
    gc.c.kill("scheduler")
    wait_for(lambda: scrape(port)[("rota_agent_connected", agent)] == 0, 60, what="link down")
    gc.change(0, utilization=12)
    wait_for(
        lambda: scrape(port)[("rota_agent_gpu_utilization_percent", gpu(0))] == 12,
        10,
        what="a reading taken while disconnected",
    )
    gc.c.start_scheduler()
    m = wait_for(
        lambda: (m := scrape(port))[("rota_agent_connected", agent)] == 1 and m,
        30,
        what="link up again",
    )
    assert m[("rota_agent_reconnects_total", agent)] == 1
    assert m[("rota_agent_gpu_allocated", gpu(1, job=job))] == 1

    gc.c.kill("agent-n1", signal.SIGTERM)
    assert gc.c.procs["agent-n1"].returncode == 0
    with pytest.raises(urllib.error.URLError):
        scrape(port)


def test_agent_metrics_are_off_by_default_and_loopback_unless_configured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load_agent_config(None, {}).metrics_listen is None
    for bad, message in (
        ("0.0.0.0:9719", "metrics_listen must be a loopback address"),
        ("10.1.2.3:9719", "metrics_listen must be a loopback address"),
        ("localhost", "metrics_listen must be HOST:PORT"),
    ):
        with pytest.raises(SettingsError, match=message):
            load_agent_config(None, {}, metrics_listen=bad)
        assert main(["agent", "--metrics-listen", bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"rota agent: error: {message}") and err.count("\n") == 1
    with pytest.raises(SettingsError, match="or set metrics_insecure: true in the agent's config"):
        load_agent_config(None, {}, metrics_listen="0.0.0.0:9719")

    path = tmp_path / "agent.yaml"
    path.write_text("agent:\n  metrics_listen: 0.0.0.0:9719\n  metrics_insecure: true\n")
    assert load_agent_config(path, {}).metrics_listen == "0.0.0.0:9719"
    assert load_agent_config(None, {}, metrics_listen="[::1]:9719").metrics_listen == "[::1]:9719"
