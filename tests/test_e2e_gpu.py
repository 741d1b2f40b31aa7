"""Issue 3 end to end: GPUs as NVML sees them (fake libnvidia-ml.so.1 in a real agent), the
scheduler's health rules, and what ginfo/gqueue/gadmin show."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests.cluster import Cluster
from tests.gpu_e2e import SLEEPER, GpuCluster, gpus, wait_for
from tests.nvml_fake import HOSTBRIDGE, SINGLE, SYSTEM, GiB, fake_gpu


@pytest.fixture
def gc(cluster: Cluster, fake_nvml_lib: Path) -> GpuCluster:
    return GpuCluster(cluster, fake_nvml_lib)


def test_inventory_telemetry_and_staleness_in_ginfo(gc: GpuCluster) -> None:
    fake = [
        fake_gpu(0, name="NVIDIA H100 80GB HBM3", memory_total=80 * GiB, cc_major=9),
        fake_gpu(1, name="NVIDIA H100 80GB HBM3", memory_total=80 * GiB, cc_major=9),
        fake_gpu(2, name="NVIDIA A10", memory_total=24 * GiB, cc_major=8, cc_minor=6),
    ]
    topo = [[0, SINGLE, SYSTEM], [SINGLE, 0, HOSTBRIDGE], [SYSTEM, HOSTBRIDGE, 0]]
    # memory used with no process would make a free GPU dirty: not what this test is about
    gc.start(fake, topology=topo, p2p=[[1, 1, 0], [1, 1, 1], [0, 1, 1]], gpu_dirty_memory="1Ti")
    node = gc.node()
    inv = node["inventory"]
    assert [(g["name"], int(g["memory_total"]), g["uuid"]) for g in inv["gpus"]] == [
        (g["name"], g["memory_total"], g["uuid"]) for g in fake
    ]
    assert [g["compute_capability"] for g in inv["gpus"]] == ["9.0", "9.0", "8.6"]
    assert [g["pci_bus_id"] for g in inv["gpus"]] == [g["pci_bus_id"] for g in fake]
    assert inv["driver_version"] == "550.54.15" and inv["cuda_version"] == "12.4"
    links = {
        (link.get("a", 0), link["b"]): (link["level"], link.get("p2p", False))
        for link in inv["links"]
    }
    assert links == {(0, 1): ("PIX", True), (0, 2): ("SYS", False), (1, 2): ("PHB", True)}

    gc.change(1, utilization=37, temperature=51, memory_used=3 * GiB)
    wait_for(lambda: gc.gpu(1).get("telemetry", {}).get("utilization") == 37, 30, what="telemetry")
    table = gc.c.cli("ginfo", "-G", check=True).stdout
    row = next(
        line.split() for line in table.splitlines() if line.split()[:2] == [gc.node_name, "1"]
    )
    assert "idle" in row and "37%" in row and "3.0Gi/80Gi" in row and "51C" in row
    detail = gc.c.cli("ginfo", "-N", gc.node_name, check=True).stdout
    assert "driver 550.54.15, CUDA 12.4" in detail
    assert all(g["uuid"] in detail for g in fake)
    assert "PIX+" in detail and "SYS" in detail

    gc.c.kill("agent-n1")  # heartbeats stop: the values stay, marked stale, never as fresh
    wait_for(lambda: gc.gpu(1).get("stale"), 30, what="telemetry marked stale")
    table = gc.c.cli("ginfo", "-G", check=True).stdout
    row = next(
        line.split() for line in table.splitlines() if line.split()[:2] == [gc.node_name, "1"]
    )
    assert "37%*" in row and "51C*" in row and "3.0Gi/80Gi*" in row
    assert "* stale" in table


def test_lost_gpu_is_unhealthy_kept_across_restart_and_resumed(
    gc: GpuCluster,
) -> None:
    gc.start(gpus(2))
    first = gc.c.submit(SLEEPER)
    gc.c.wait_state(first, "RUNNING")
    assert gc.gpu_ids(first) == [0]

    gc.change(0, lost=True)  # marked by the first heartbeat carrying it: test_gpu_rules.py
    gpu0 = gc.wait_gpu(0, "unhealthy", timeout=30)
    assert "GPU is lost" in gpu0["reason"] and gpu0["marked_by"] == "rota"
    assert gpu0["job_id"] == first
    # the job running on it is told: an event and a visible reason
    warning = f"GPU 0 on {gc.node_name} unhealthy: GPU is lost"
    assert f"WARN: {warning}" in gc.queue_line(first)
    assert any(e.get("kind") == "warning" and warning in e["reason"] for e in gc.events(first))

    second = gc.c.submit(SLEEPER)
    gc.c.wait_state(second, "RUNNING")
    assert gc.gpu_ids(second) == [1], "new jobs avoid the lost GPU"
    gc.c.cli("gcancel", first, check=True)
    gc.c.wait_state(first, "CANCELLED")
    third = gc.c.submit(SLEEPER)
    assert gc.c.pending_reason(third) == "Resources"

    # the GPU recovers, but only an admin returns it: the mark survives a scheduler restart
    gc.change(0, lost=False)
    gc.c.kill("scheduler", signal.SIGKILL)
    gc.c.start_scheduler()
    wait_for(
        lambda: (n := gc.c.node(gc.node_name)) and n["state"] != "DOWN", 30, what="reconnected"
    )
    gc.change(0, temperature=41)  # a marker: once shown, a report without the loss was judged
    wait_for(lambda: gc.gpu(0).get("telemetry", {}).get("temperature") == 41, 30, what="report")
    assert gc.gpu(0)["state"] == "unhealthy"
    assert gc.c.job(third)["state"] == "PENDING"
    ginfo = gc.c.cli("ginfo", check=True).stdout
    assert "GPU 0 unhealthy" in ginfo

    out = gc.c.cli("gadmin", "gpu", "resume", gc.node_name, "0", check=True).stdout
    assert "resumed" in out and "GPU is lost" in out
    gc.c.wait_state(third, "RUNNING")
    assert gc.gpu_ids(third) == [0]
    bad = gc.c.cli("gadmin", "gpu", "resume", gc.node_name, "7")
    assert bad.returncode == 2 and "no GPU 7" in bad.stderr


def test_foreign_process_keeps_jobs_off_gpu0_and_job_processes_are_mapped(
    gc: GpuCluster,
) -> None:
    stranger = {"pid": 4_000_000, "used_memory": 3 * GiB}  # no such pid: belongs to no job
    fake = gpus(2)
    fake[0] = fake_gpu(0, memory_used=3 * GiB, processes=[stranger])
    gc.start(fake)
    gpu0 = gc.wait_gpu(0, "busy")
    assert "pid 4000000 using 3.0Gi" in gpu0["reason"]
    procs = gpu0["telemetry"]["processes"]
    assert procs == [{"pid": 4_000_000, "memory_used": str(3 * GiB)}]
    table = gc.c.cli("ginfo", "-G", check=True).stdout
    assert "busy" in table and "pid 4000000 using 3.0Gi" in table

    first = gc.c.submit(SLEEPER)
    gc.c.wait_state(first, "RUNNING")
    assert gc.gpu_ids(first) == [1], "the busy GPU 0 gets no job"
    second = gc.c.submit(SLEEPER)
    assert gc.c.pending_reason(second) == "Resources"

    # the job's own process (its container's init, a real host pid) is mapped to the job
    pid = gc.container_pid(first)
    gc.change(1, memory_used=GiB, processes=[{"pid": pid, "used_memory": GiB}])
    wait_for(
        lambda: gc.gpu(1)["telemetry"].get("processes", [{}])[0].get("job_id") == first,
        30,
        what="job process mapped to its job",
    )
    detail = gc.c.cli("ginfo", "-N", gc.node_name, check=True).stdout
    assert any(
        line.split()[:2] == ["1", str(pid)] and first in line for line in detail.splitlines()
    )
    assert "(not a rota job)" in detail

    gc.change(0, memory_used=0, processes=[])  # the stranger exits: GPU 0 takes the next job
    gc.c.wait_state(second, "RUNNING")
    assert gc.gpu_ids(second) == [0]


def test_hot_gpu_is_drained_and_returns_once_cool(gc: GpuCluster) -> None:
    gc.start(gpus(2), gpu_auto_resume_after=1.5)
    gc.change(0, temperature=95)
    gpu0 = gc.wait_gpu(0, "unhealthy")
    assert re.search(r"temperature 95C at or above 85C for \d+s", gpu0["reason"]), gpu0
    job = gc.c.submit(SLEEPER)
    gc.c.wait_state(job, "RUNNING")
    assert gc.gpu_ids(job) == [1], "the hot GPU gets no job"
    gc.change(0, temperature=60)
    gc.wait_gpu(0, "idle", timeout=30)  # healthy for gpu_auto_resume_after: back in service


def test_memory_held_after_the_job_ends_marks_the_gpu_dirty_until_released(
    gc: GpuCluster,
) -> None:
    gc.start(gpus(1))
    first = gc.c.submit(SLEEPER)
    gc.c.wait_state(first, "RUNNING")
    gc.change(0, memory_used=10 * GiB, utilization=90)
    gc.c.cli("gcancel", first, check=True)
    gc.c.wait_state(first, "CANCELLED")
    gpu0 = gc.wait_gpu(0, "dirty", timeout=30)
    assert f"10Gi still in use after job {first} ended" in gpu0["reason"]
    second = gc.c.submit(SLEEPER)
    waiting = wait_for(lambda: (j := gc.c.job(second))["reason"] and j, 30, what="a pass")
    assert waiting["state"] == "PENDING", "a dirty GPU gets no job"
    gc.change(0, memory_used=0, utilization=0)
    gc.c.wait_state(second, "RUNNING")
    assert gc.gpu(0)["state"] == "allocated"


def test_idle_gpus_warn_the_job_and_the_policy_cancels_it(gc: GpuCluster) -> None:
    fake = gpus(2)
    fake[1] = fake_gpu(1, utilization=55)
    gc.start(fake, idle_gpu_warn_after=2.0, idle_gpu_cancel_after=15.0)
    idle = gc.c.submit(SLEEPER)
    gc.c.wait_state(idle, "RUNNING")
    busy = gc.c.submit(SLEEPER)
    gc.c.wait_state(busy, "RUNNING")
    assert (gc.gpu_ids(idle), gc.gpu_ids(busy)) == ([0], [1])
    wait_for(lambda: "WARN: GPUs idle" in gc.queue_line(idle), 20, what="idle warning")
    assert gc.c.job(idle)["reason"].startswith("GPUs idle (0% utilisation) for")
    assert any(e.get("kind") == "warning" and "GPUs idle" in e["reason"] for e in gc.events(idle))
    shown = gc.c.cli("gcontrol", "show", "job", idle, check=True).stdout
    assert any("WARNING" in line and "GPUs idle" in line for line in shown.splitlines())
    done = gc.c.wait_state(idle, "CANCELLED", timeout=40)
    assert "idle" in done["reason"] and "idle_gpu_cancel_after" in done["reason"]
    job = gc.c.job(busy)
    assert job["state"] == "RUNNING" and not job["reason"], "a job using its GPU is left alone"


def test_no_nvml_library_agent_runs_with_zero_gpus_and_ginfo_says_why(
    cluster: Cluster, tmp_path: Path
) -> None:
    cluster.start_scheduler()
    empty = tmp_path / "no-nvml"
    empty.mkdir()
    env = {**cluster.env, "LD_LIBRARY_PATH": str(empty)}
    env.pop("FAKE_NVML_CONFIG", None)
    cluster.start_agent("n1", None, env=env)
    name = cluster.node_name("n1")
    node = cluster.node(name)
    assert node is not None and node["state"] == "IDLE"
    assert "NVML could not be loaded" in node["inventory"]["note"]
    assert not node.get("gpus") and not node.get("gpus_total")
    row = next(
        line for line in cluster.cli("ginfo", check=True).stdout.splitlines() if name in line
    )
    assert "0/0" in row and "NVML could not be loaded" in row and "runs with 0 GPUs" in row
    log = cluster.log("agent-n1")
    assert "WARNING" in log and "libnvidia-ml.so.1" in log and "0 GPUs" in log
