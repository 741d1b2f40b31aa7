"""GPU health as the scheduler judges it from telemetry (docs/gpus.md has the rules).

Pure functions and small records, no I/O: ``GpuTrack.observe`` applies one fresh telemetry
sample of one GPU and says what the GPU is now; ``display`` derives what ``ginfo`` shows.

- unhealthy: NVML reports an error (lost, unknown error, disappeared, unreadable) or the GPU
  stays at or above ``gpu_max_temperature`` for ``gpu_hot_for``. It is marked (``GpuMark``,
  persisted) and stays out of service until an admin resumes it, or, with
  ``gpu_auto_resume_after``, once it has been healthy that long.
- busy: a free GPU runs a process that belongs to no rota job (``gpu_foreign_blocks``).
- dirty: a free GPU still holds at least ``gpu_dirty_memory`` with no foreign process for
  ``gpu_dirty_grace``; it is clean again as soon as the memory is released.
"""

from __future__ import annotations

from dataclasses import dataclass

from rota.messages import GpuTelemetry
from rota.scheduler.config import SchedulerConfig
from rota.units import format_size

AUTO = "rota"  # who marks a GPU unhealthy from telemetry


@dataclass(slots=True)
class GpuMark:
    """A GPU taken out of service (unhealthy) and why; persisted so a restart keeps it."""

    index: int
    uuid: str
    reason: str
    since: float
    by: str = AUTO


@dataclass(frozen=True, slots=True)
class GpuDisplay:
    """What ``ginfo`` shows for one GPU."""

    state: str  # idle allocated unhealthy dirty busy
    reason: str = ""
    job_id: str = ""
    marked_by: str = ""
    marked_time: float = 0.0
    allocatable: bool = True


@dataclass(slots=True)
class GpuTrack:
    """What the scheduler remembers between heartbeats about one GPU (in memory only)."""

    hot_since: float | None = None
    ok_since: float | None = None
    held_since: float | None = None  # free, holding memory, no foreign process
    last_job: str = ""  # display id of the last job seen holding it
    dirty: bool = False
    busy: bool = False

    def problem(self, t: GpuTelemetry, now: float, cfg: SchedulerConfig) -> str:
        """Why this GPU is unhealthy now ("" when it is fine); tracks how long it was hot."""
        if t.error:
            self.hot_since = None
            return t.error
        limit = cfg.gpu_max_temperature
        if not limit or t.temperature is None or t.temperature < limit:  # None: no reading
            self.hot_since = None
            return ""
        self.hot_since = now if self.hot_since is None else self.hot_since
        if now - self.hot_since < cfg.gpu_hot_for:
            return ""
        return (
            f"temperature {t.temperature:.0f}C at or above {limit:.0f}C "
            f"for {human_duration(now - self.hot_since)}"
        )

    def resumable(self, healthy: bool, now: float, cfg: SchedulerConfig) -> bool:
        """True once a marked GPU has been healthy for ``gpu_auto_resume_after`` (if set)."""
        if not healthy:
            self.ok_since = None
            return False
        self.ok_since = now if self.ok_since is None else self.ok_since
        return bool(cfg.gpu_auto_resume_after) and now - self.ok_since >= cfg.gpu_auto_resume_after

    def occupancy(
        self, t: GpuTelemetry | None, holder: str, now: float, cfg: SchedulerConfig
    ) -> bool:
        """Update ``busy`` and ``dirty`` from a sample; True when either changed."""
        before = (self.busy, self.dirty)
        if holder:
            self.last_job, self.held_since = holder, None
            self.busy = self.dirty = False
        elif t is None or t.error:
            self.held_since = None
            self.busy = self.dirty = False
        else:
            self.busy = cfg.gpu_foreign_blocks and bool(foreign(t))
            holding = t.memory_used >= cfg.gpu_dirty_memory and not foreign(t)
            if not holding:
                self.held_since = None
            elif self.held_since is None:
                self.held_since = now
            self.dirty = (
                self.held_since is not None and now - self.held_since >= cfg.gpu_dirty_grace
            )
        return before != (self.busy, self.dirty)


def human_duration(seconds: float) -> str:
    """``45s``, ``30m``, ``1h30m``, ``2d3h``: durations in reasons and events."""
    total = max(0, round(seconds))
    days, rem = divmod(total, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"


def foreign(t: GpuTelemetry) -> list[tuple[int, int]]:
    """(pid, memory) of the processes on this GPU that belong to no rota job."""
    return [(p.pid, p.memory_used) for p in t.processes if not p.job_id]


def _foreign_text(t: GpuTelemetry) -> str:
    return ", ".join(f"pid {pid} using {format_size(mem)}" for pid, mem in foreign(t))


def display(
    t: GpuTelemetry | None,
    holder: str,
    mark: GpuMark | None,
    track: GpuTrack | None,
    cfg: SchedulerConfig,
) -> GpuDisplay:
    """State, reason and job of one GPU, most serious first: unhealthy, allocated, dirty,
    busy, idle."""
    if mark is not None:
        return GpuDisplay("unhealthy", mark.reason, holder, mark.by, mark.since, False)
    if t is not None and t.error:  # resumed by hand but still failing: marked again next beat
        return GpuDisplay("unhealthy", t.error, holder, allocatable=False)
    others = _foreign_text(t) if t is not None else ""
    if holder:
        note = f"also used by {others} (not a rota job)" if others else ""
        return GpuDisplay("allocated", note, holder)
    if track is not None and track.dirty and t is not None:
        after = f"after job {track.last_job} ended" if track.last_job else "with no job on it"
        return GpuDisplay(
            "dirty",
            f"{format_size(t.memory_used)} still in use {after}; no new jobs until released",
            allocatable=False,
        )
    if others:
        blocks = cfg.gpu_foreign_blocks
        return GpuDisplay("busy", f"{others} (not a rota job)", allocatable=not blocks)
    return GpuDisplay("idle")
