"""GPU health rules (scheduler/cluster/gpus.py), the GpuHealth service with an injected clock, and the
agent's pid -> job mapping (agent/runtime/owners.py) on a fake /proc tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.agent.runtime.owners import ProcessOwners
from rota.messages import (
    GpuInfo,
    GpuProcess,
    GpuTelemetry,
    Heartbeat,
    Hello,
    Inventory,
)
from rota.scheduler.cluster.gpus import GpuMark, GpuTrack, display, human_duration
from rota.scheduler.config import SchedulerConfig, load_config, policy_config
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.services import Services, build_services
from rota.scheduler.engine import Engine
from rota.scheduler.policy import make_policy
from rota.scheduler.store.store import Store

GiB = 2**30
CFG = SchedulerConfig(
    gpu_max_temperature=85, gpu_hot_for=10, gpu_dirty_grace=5, gpu_auto_resume_after=30
)


def tel(index: int = 0, **fields: object) -> GpuTelemetry:
    return GpuTelemetry(index=index, **fields)  # type: ignore[arg-type]


def test_error_is_a_problem_at_once_heat_only_after_hot_for() -> None:
    track = GpuTrack()
    assert track.problem(tel(error="GPU is lost"), 0, CFG) == "GPU is lost"
    assert track.problem(tel(temperature=90), 100, CFG) == ""
    assert track.problem(tel(temperature=90), 109, CFG) == ""
    assert track.problem(tel(temperature=91), 110, CFG) == (
        "temperature 91C at or above 85C for 10s"
    )
    assert track.problem(tel(temperature=60), 111, CFG) == ""
    assert track.problem(tel(temperature=90), 112, CFG) == "", "cooling down restarts the clock"
    off = SchedulerConfig(gpu_max_temperature=0)
    assert GpuTrack().problem(tel(temperature=120), 0, off) == ""


def test_auto_resume_needs_a_healthy_stretch() -> None:
    track = GpuTrack()
    assert not track.resumable(True, 0, CFG)
    assert not track.resumable(False, 20, CFG)
    assert not track.resumable(True, 25, CFG)
    assert track.resumable(True, 55, CFG)
    assert not GpuTrack().resumable(True, 1e9, SchedulerConfig())  # 0: admin only


def test_busy_and_dirty_from_processes_and_memory() -> None:
    track = GpuTrack()
    foreign = tel(memory_used=GiB, processes=(GpuProcess(77, GiB),))
    assert track.occupancy(foreign, "", 0, CFG) and track.busy and not track.dirty
    shown = display(foreign, "", None, track, CFG)
    assert (shown.state, shown.allocatable) == ("busy", False)
    assert shown.reason == "pid 77 using 1.0Gi (not a rota job)"
    lenient = SchedulerConfig(gpu_foreign_blocks=False)
    assert display(foreign, "", None, GpuTrack(), lenient).allocatable

    mine = tel(memory_used=GiB, processes=(GpuProcess(78, GiB, "12"),))
    assert track.occupancy(mine, "12", 1, CFG) and not track.busy
    assert display(mine, "12", None, track, CFG).state == "allocated"
    held = tel(memory_used=2 * GiB)
    assert not track.occupancy(held, "", 2, CFG), "within the grace period"
    assert track.occupancy(held, "", 7, CFG) and track.dirty
    shown = display(held, "", None, track, CFG)
    assert shown.state == "dirty" and "2.0Gi still in use after job 12 ended" in shown.reason
    assert track.occupancy(tel(memory_used=10 * 2**20), "", 8, CFG) and not track.dirty


def test_display_precedence() -> None:
    mark = GpuMark(0, "GPU-x", "GPU is lost", 5.0)
    shown = display(tel(error="GPU is lost"), "9", mark, GpuTrack(), CFG)
    assert (shown.state, shown.job_id, shown.marked_by, shown.allocatable) == (
        "unhealthy",
        "9",
        "rota",
        False,
    )
    assert display(None, "", None, None, CFG).state == "idle"


def test_human_duration() -> None:
    assert [human_duration(s) for s in (0.4, 59, 60, 90, 3600, 5400, 86400 + 7200)] == [
        "0s",
        "59s",
        "1m",
        "1m30s",
        "1h",
        "1h30m",
        "1d2h",
    ]


def test_config_reads_gpu_sizes_and_durations(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "scheduler:\n  gpu_dirty_memory: 1Gi\n  gpu_hot_for: 2m\n  idle_gpu_warn_after: 90\n"
    )
    cfg = load_config(path)
    assert (cfg.gpu_dirty_memory, cfg.gpu_hot_for, cfg.idle_gpu_warn_after) == (GiB, 120, 90)


# ---------------------------------------------------------------- GpuHealth, injected clock


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def inventory(*uuids: str) -> Inventory:
    return Inventory(
        gpus=tuple(GpuInfo(i, u, "NVIDIA A100", 80 * GiB) for i, u in enumerate(uuids)),
        cpus=8,
        memory=64 * GiB,
    )


def make_engine(url: str, clock: Clock) -> tuple[Services, Engine]:
    cfg = SchedulerConfig(open_registration=True, gpu_hot_for=10, gpu_auto_resume_after=10)
    services = build_services(Store(url), cfg, clock, make_policy("first-fit", policy_config(cfg)))
    return services, Engine(services)


def allocatable(services: Services, node: str) -> list[bool]:
    """What the next pass sees of ``node``'s GPUs (its view in the snapshot)."""
    view = services.planner.snapshots.node_view(services.model.nodes[node])
    return [g.allocatable for g in view.gpus]


def test_marks_persist_follow_uuids_and_only_an_admin_returns_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    clock = Clock()
    s, engine = make_engine(url, clock)
    engine.steps.hello(Hello("n1", "", inventory("GPU-a", "GPU-b")), 1)
    beat = Heartbeat(gpus=(tel(0), tel(1, error="GPU is lost")))
    assert engine.steps.heartbeat("n1", 1, beat)
    assert allocatable(s, "n1") == [True, False]

    clock.now += 60
    s, engine = make_engine(url, clock)  # a scheduler restart keeps the mark
    assert allocatable(s, "n1") == [True, False]
    # the agent comes back with GPU-b at index 0 (GPU-a is gone): the mark follows the UUID
    engine.steps.hello(Hello("n1", "", inventory("GPU-b")), 2)
    assert engine.steps.heartbeat("n1", 2, Heartbeat(gpus=(tel(0),))) is False
    assert allocatable(s, "n1") == [False]
    with pytest.raises(UserError, match="no GPU 3"):
        s.gpus.resume("n1", 3, "admin")
    assert "resumed by admin (was unhealthy: GPU is lost)" in s.gpus.resume("n1", 0, "admin")
    assert allocatable(s, "n1") == [True]
    assert "not marked" in s.gpus.resume("n1", 0, "admin")
    assert s.gpus.drain("n1", 0, "admin", "fan noise").endswith("drained: fan noise")
    clock.now += 3600
    engine.steps.heartbeat("n1", 2, Heartbeat(gpus=(tel(0),)))
    assert allocatable(s, "n1") == [False], "a GPU drained by hand never returns by itself"


# ---------------------------------------------------------------- pid -> job on a fake /proc

CID_A = "a" * 64
CID_B = "b" * 64


def fake_proc(root: Path, pid: int, ppid: int, cgroup: str) -> None:
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "cgroup").write_text(cgroup)
    (d / "stat").write_text(f"{pid} (python (x) y) S {ppid} 1 1 0 -1\n")


def test_owners_by_cgroup_by_ancestry_and_foreign(tmp_path: Path) -> None:
    fake_proc(tmp_path, 100, 1, f"12:pids:/docker/{CID_A}\n0::/docker/{CID_A}\n")
    fake_proc(tmp_path, 200, 1, f"0::/system.slice/docker-{CID_B}.scope\n")
    fake_proc(tmp_path, 300, 1, "0::/\n")  # the container init, cgroup hidden (cgroupns)
    fake_proc(tmp_path, 301, 300, "0::/\n")  # its child
    fake_proc(tmp_path, 400, 1, "0::/user.slice\n")  # a user's own process
    asked: list[str] = []
    info = {CID_A: (90, "7"), CID_B: (95, "8_3"), "c" * 64: (300, "9")}

    def container_info(cid: str) -> tuple[int, str] | None:
        asked.append(cid)
        return info.get(cid)

    owners = ProcessOwners(container_info, proc=tmp_path)
    live = [CID_A, CID_B, "c" * 64]
    got = owners.owners([100, 200, 301, 400, 999], live)
    assert got == {100: "7", 200: "8_3", 301: "9"}
    assert owners.owners([100], live) == {100: "7"}
    assert sorted(asked) == sorted(live), "container details are cached"
    assert owners.owners([100], [CID_B]) == {}, "a container that is gone owns nothing"
    assert owners.owners([], live) == {}
