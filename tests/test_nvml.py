"""The agent's NVML backend: the real pynvml code against the fake libnvidia-ml.so.1 (C, gcc).

In-process tests preload the fake by full path; pynvml then loads it once per process. Tests that
need another library state (none at all, or loading by LD_LIBRARY_PATH) run in a subprocess.
"""

from __future__ import annotations

import ctypes.util
import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pynvml
import pytest

from rota.agent.gpu import NoGpuBackend, open_backend
from rota.agent.gpu.nvml import DISAPPEARED, LOST, NvmlBackend
from tests.nvml_fake import (
    HOSTBRIDGE,
    INTERNAL,
    MULTIPLE,
    NODE,
    SINGLE,
    SYSTEM,
    FakeNvml,
    GiB,
    fake_gpu,
    fake_nvml,  # noqa: F401  (fixture)
    fake_nvml_lib,  # noqa: F401  (fixture)
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def backend(fake_nvml: FakeNvml) -> Iterator[NvmlBackend]:  # noqa: F811
    b = NvmlBackend()
    yield b
    b.close()


def by_index(samples: list) -> dict:
    return {s.index: s for s in samples}


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_inventory_equals_the_fake_gpus(fake_nvml: FakeNvml) -> None:  # noqa: F811
    gpus = [
        fake_gpu(0),
        fake_gpu(1, name="NVIDIA H100 80GB HBM3", cc_major=9, memory_total=81559 * 2**20),
        fake_gpu(2, name="NVIDIA GeForce RTX 4090", cc_major=8, cc_minor=9, memory_total=24 * GiB),
    ]
    fake_nvml.write(gpus, driver_version="555.42.06", cuda_version=12050)
    b = NvmlBackend()
    try:
        inv = b.inventory()
    finally:
        b.close()
    assert [(g.index, g.uuid, g.name, g.memory_total, g.pci_bus_id) for g in inv.gpus] == [
        (i, g["uuid"], g["name"], g["memory_total"], g["pci_bus_id"]) for i, g in enumerate(gpus)
    ]
    assert [g.compute_capability for g in inv.gpus] == ["8.0", "9.0", "8.9"]
    assert (inv.driver_version, inv.cuda_version) == ("555.42.06", "12.5")
    assert not inv.simulated and inv.note == ""


def test_sample_reports_telemetry_and_processes(fake_nvml: FakeNvml) -> None:  # noqa: F811
    busy = fake_gpu(
        0,
        utilization=37,
        memory_used=3 * GiB,
        temperature=71,
        power_mw=251500,
        processes=[{"pid": 4242, "used_memory": 2 * GiB}, {"pid": 4343, "used_memory": GiB}],
    )
    fake_nvml.write([busy, fake_gpu(1, memory_reserved=GiB // 2)])
    b = NvmlBackend()
    try:
        s = by_index(b.sample())
    finally:
        b.close()
    assert s[0].uuid == busy["uuid"] and s[0].error == ""
    assert (s[0].utilization, s[0].memory_used, s[0].temperature, s[0].power) == (
        37.0,
        3 * GiB,
        71.0,
        251.5,
    )
    assert [(p.pid, p.memory_used) for p in s[0].processes] == [(4242, 2 * GiB), (4343, GiB)]
    # Driver-reserved memory is not "used" by anyone: the v2 memory struct keeps it apart.
    assert (s[1].memory_used, s[1].processes, s[1].error) == (0, (), "")


def test_lost_gpu_is_reported_for_that_gpu_only(fake_nvml: FakeNvml) -> None:  # noqa: F811
    gpus = [fake_gpu(0), fake_gpu(1), fake_gpu(2)]
    fake_nvml.write(gpus)
    b = NvmlBackend()
    try:
        assert [s.error for s in b.sample()] == ["", "", ""]
        fake_nvml.write([gpus[0], fake_gpu(1, lost=True), gpus[2]])
        assert [s.error for s in b.sample()] == ["", LOST, ""]
        fake_nvml.write([gpus[0], gpus[1], fake_gpu(2, error=True)])
        assert [s.error for s in b.sample()] == ["", "", "NVML error: Unknown Error"]
        fake_nvml.write(gpus)
        assert [s.error for s in b.sample()] == ["", "", ""]
    finally:
        b.close()


def test_foreign_process_appears_with_pid_and_memory(
    fake_nvml: FakeNvml,  # noqa: F811
    backend: NvmlBackend,
) -> None:
    assert by_index(backend.sample())[0].processes == ()
    fake_nvml.write(
        [
            fake_gpu(0, memory_used=5 * GiB, processes=[{"pid": 31337, "used_memory": 5 * GiB}]),
            fake_gpu(1),
        ]
    )
    s = by_index(backend.sample())
    assert [(p.pid, p.memory_used) for p in s[0].processes] == [(31337, 5 * GiB)]
    assert s[0].memory_used == 5 * GiB and s[1].processes == ()


def test_gpu_removed_from_the_count_is_reported_disappeared(
    fake_nvml: FakeNvml,  # noqa: F811
) -> None:
    gpus = [fake_gpu(0), fake_gpu(1), fake_gpu(2)]
    fake_nvml.write(gpus)
    b = NvmlBackend()
    try:
        fake_nvml.write([gpus[0], gpus[2]])  # GPU 1 fell off the bus; NVML renumbers
        s = b.sample()
        assert [(x.index, x.uuid, x.error) for x in s] == [
            (0, gpus[0]["uuid"], ""),
            (1, gpus[1]["uuid"], DISAPPEARED),
            (2, gpus[2]["uuid"], ""),
        ]
        # A GPU still counted but lost stays "lost" even while another one is missing.
        fake_nvml.write([fake_gpu(0, lost=True), gpus[2]])
        assert [x.error for x in b.sample()] == [LOST, DISAPPEARED, ""]
    finally:
        b.close()


def test_topology_levels_p2p_and_nvlink(fake_nvml: FakeNvml) -> None:  # noqa: F811
    gpus = [fake_gpu(i) for i in range(6)] + [fake_gpu(6, nvswitch_links=12)]
    gpus.append(fake_gpu(7, nvswitch_links=18))
    n = len(gpus)
    levels = [INTERNAL, SINGLE, MULTIPLE, HOSTBRIDGE, NODE, SYSTEM]
    topology = [[SYSTEM] * n for _ in range(n)]
    for j, level in enumerate(levels):
        topology[0][j] = topology[j][0] = level
    p2p = [[1] * n for _ in range(n)]
    p2p[0][5] = p2p[5][0] = 0
    nvlink = [[0] * n for _ in range(n)]
    nvlink[1][2] = nvlink[2][1] = 4
    fake_nvml.write(gpus, topology=topology, p2p=p2p, nvlink=nvlink)
    b = NvmlBackend()
    try:
        links = {(link.a, link.b): (link.level, link.p2p) for link in b.inventory().links}
    finally:
        b.close()
    assert len(links) == n * (n - 1) // 2
    assert [links[(0, j)] for j in range(1, 6)] == [
        ("PIX", True),
        ("PXB", True),
        ("PHB", True),
        ("NODE", True),
        ("SYS", False),
    ]
    assert links[(1, 2)] == ("NV4", True)  # direct NVLinks win over the PCIe level
    assert links[(6, 7)] == ("NV12", True)  # through NVSwitch: the lesser side's link count
    assert links[(3, 4)] == ("SYS", True)


def test_gpu_unreadable_at_start_up_is_listed_and_reported(
    fake_nvml: FakeNvml,  # noqa: F811
) -> None:
    fake_nvml.write([fake_gpu(0), fake_gpu(1, lost=True)])
    b = NvmlBackend()
    try:
        gpus = b.inventory().gpus
        assert [(g.index, g.uuid) for g in gpus] == [(0, fake_gpu(0)["uuid"]), (1, "")]
        assert [s.error for s in b.sample()] == ["", LOST]
        assert [(link.a, link.b) for link in b.inventory().links] == []
    finally:
        b.close()


def test_fake_keeps_nvml_contracts(fake_nvml: FakeNvml) -> None:  # noqa: F811
    """The fake checks what real NVML checks, so a wrong call fails here, not on a real node."""
    fake_nvml.write([fake_gpu(0, memory_used=GiB, memory_reserved=GiB)])
    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(pynvml.NVMLError_ArgumentVersionMismatch):
            pynvml.nvmlDeviceGetMemoryInfo(h, version=1)
        assert pynvml.nvmlDeviceGetMemoryInfo(h).used == 2 * GiB  # v1 counts reserved as used
        v2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
        assert (v2.used, v2.reserved, v2.free) == (GiB, GiB, 78 * GiB)
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            pynvml.nvmlDeviceGetHandleByIndex(1)
        with pytest.raises(pynvml.NVMLError_NotFound):
            pynvml.nvmlDeviceGetHandleByUUID("GPU-nope")
        assert ctypes.sizeof(pynvml.nvmlPciInfo_t) == 68
        assert ctypes.sizeof(pynvml.c_nvmlProcessInfo_v3_t) == 24
        assert pynvml.nvmlDeviceGetPciInfo(h).busIdLegacy == "0000:07:00.0"
        assert pynvml.nvmlErrorString(pynvml.NVML_ERROR_GPU_IS_LOST) == "GPU is lost"
    finally:
        pynvml.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetCount()


def test_open_backend_uses_nvml(fake_nvml: FakeNvml) -> None:  # noqa: F811
    b, inv = open_backend(None, "gpu01")
    try:
        assert isinstance(b, NvmlBackend)
        assert [g.uuid for g in inv.gpus] == [fake_gpu(0)["uuid"], fake_gpu(1)["uuid"]]
    finally:
        b.close()


def test_open_backend_simulated_ignores_nvml() -> None:
    _, inv = open_backend(2, "laptop")
    assert inv.simulated and [g.uuid for g in inv.gpus] == ["GPU-sim-laptop-0", "GPU-sim-laptop-1"]


def test_driver_not_loaded_gives_zero_gpus_and_says_why(
    fake_nvml: FakeNvml,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv("FAKE_NVML_CONFIG")  # the fake then fails nvmlInit like a missing driver
    with caplog.at_level(logging.WARNING, logger="rota.agent"):
        b, inv = open_backend(None, "gpu02")
    assert isinstance(b, NoGpuBackend) and inv.gpus == () and b.sample() == []
    warnings = [r.getMessage() for r in caplog.records if r.name == "rota.agent"]
    assert warnings == ["NVML could not be loaded (Driver Not Loaded); node gpu02 runs with 0 GPUs"]
    assert inv.note == warnings[0]


def test_agent_subprocess_loads_fake_through_ld_library_path(
    fake_nvml: FakeNvml,  # noqa: F811
) -> None:
    gpus = [fake_gpu(i, utilization=10 * i) for i in range(4)]
    fake_nvml.write(gpus)
    code = """
        import json
        from rota.agent.gpu import open_backend
        b, inv = open_backend(None, "gpu03")
        maps = open("/proc/self/maps").read()
        lib = next(line.split()[-1] for line in maps.splitlines() if "libnvidia-ml" in line)
        print(json.dumps({"uuids": [g.uuid for g in inv.gpus], "names": [g.name for g in inv.gpus],
                          "util": [s.utilization for s in b.sample()], "lib": lib}))
        b.close()
    """
    out = run_python(code, fake_nvml.env())
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["uuids"] == [g["uuid"] for g in gpus]
    assert got["names"] == [g["name"] for g in gpus]
    assert got["util"] == [0.0, 10.0, 20.0, 30.0]
    assert Path(got["lib"]).parent == fake_nvml.lib_dir.resolve()


@pytest.mark.skipif(
    ctypes.util.find_library("nvidia-ml") is not None,
    reason="this host has a real NVML library in the loader's cache",
)
def test_no_nvml_library_runs_with_zero_gpus_and_says_why(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "FAKE_NVML_CONFIG"}
    env["LD_LIBRARY_PATH"] = str(empty)
    code = """
        import json, logging
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
        from rota.agent.gpu import open_backend
        b, inv = open_backend(None, "gpu04")
        print(json.dumps({"gpus": len(inv.gpus), "note": inv.note, "samples": len(b.sample())}))
    """
    out = run_python(code, env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert (got["gpus"], got["samples"]) == (0, 0)
    log_lines = out.stderr.strip().splitlines()
    assert len(log_lines) == 1, log_lines
    assert log_lines[0].startswith("WARNING rota.agent NVML could not be loaded")
    assert "libnvidia-ml.so.1: cannot open shared object file" in log_lines[0]
    assert log_lines[0].endswith("node gpu04 runs with 0 GPUs")
    assert got["note"] in log_lines[0]
