"""One load-generator invocation: the scheduler under load, then the bare floor under the same
load, and the report (docs/benchmarks.md, "Many nodes on one scheduler", says what each figure
means).

Scheduler phase: start ``rota scheduler`` (unless an address is given), register the nodes,
submit one held probe job, ramp the nodes up, let them settle, then the window: CPU and RSS of
the scheduler, heartbeats and their round trip, unary RPCs every ``probe_interval``, ``ginfo``
runs spread over the window; ``jobs`` jobs submitted a tenth into the window; once they all have
launch orders (at three quarters of the window at the latest) ``stop_nodes`` idle nodes are
stopped and timed until DOWN. After the window the run waits (at most ``drain`` seconds) for the jobs to complete
and the stopped nodes to be DOWN. Floor phase: the same nodes, ramp, settle and window against
the floor server, with the same unary probes (answered with empty replies), no jobs.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.loadgen import auth, protocol, servers
from bench.loadgen.fleet import COMPLETED, CONNECTED, LAUNCHED, Fleet
from bench.loadgen.node import AFTER, WINDOW, NodeSettings
from bench.loadgen.probes import (
    ProcessMeter,
    UnaryProbes,
    byte_compile,
    quantiles,
    time_ginfo,
    watch_down,
)
from rota.units import parse_duration
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc


@dataclass(frozen=True)
class Options:
    nodes: int = 1000
    window: float = 60.0
    ramp: float = 30.0
    settle: float = 5.0
    workers: int = max(1, min(8, os.cpu_count() or 1))
    jobs: int = 1000
    job_runtime: float = 10.0
    start_delay: float = 0.2
    submit_batch: int = 100
    stop_nodes: int = 10
    stop_mode: str = "freeze"  # freeze (silent, connection open) or close (stream ended)
    probe_interval: float = 1.0
    ginfo_runs: int = 3
    drain: float = 120.0
    settings: dict[str, Any] = field(default_factory=dict)  # the scheduler's YAML settings
    scheduler: str = ""  # HOST:PORT of a running scheduler instead of starting one
    scheduler_pid: int = 0  # its pid, for CPU and RSS
    token: str = ""  # an admin's token for that scheduler; one it starts gets its own
    floor: bool = True
    floor_window: float = 0.0  # 0: the same as window
    logs: str = ""  # keep the servers' logs and database here instead of a temporary folder


async def run(options: Options) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rota-loadgen-") as tmp:
        root = Path(options.logs or tmp)
        root.mkdir(parents=True, exist_ok=True)
        report: dict[str, Any] = {"options": asdict(options)}
        if options.ginfo_runs:
            byte_compile(servers.REPO)
        report["scheduler"] = await _scheduler_phase(options, root)
        if options.floor:
            report["floor"] = await _floor_phase(options, root, report["scheduler"]["heartbeats"])
            report["ratios"] = _ratios(report["scheduler"], report["floor"])
        return report


def _names(count: int) -> list[str]:
    return [f"sim-{i:05d}" for i in range(count)]


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 2)


def _setting(options: Options, key: str, default: float) -> float:
    value = options.settings.get(key, default)
    return parse_duration(value) if isinstance(value, str) else float(value)


async def _at(moment: float, work: Awaitable[Any]) -> Any:
    await asyncio.sleep(max(0.0, moment - time.monotonic()))
    return await work


async def _scheduler_phase(o: Options, root: Path) -> dict[str, Any]:
    server = None
    address, pid, metrics = o.scheduler, o.scheduler_pid, ""
    if not address:
        server = servers.start_scheduler(root, o.settings)
        await server.wait_ready()
        address, pid, metrics = server.address, server.pid, server.metrics_url
    token = auth.admin_token(root / "scheduler.db") if server is not None else o.token
    try:
        out: dict[str, Any] = {"address": address}
        names = _names(o.nodes)
        began = time.monotonic()
        tokens = await servers.register(address, token, names)
        out["registration_s"] = round(time.monotonic() - began, 2)
        async with auth.channel(address, token) as channel:
            jobs = pb_grpc.JobServiceStub(channel)
            settings = NodeSettings(address, o.start_delay, o.job_runtime)
            fleet = Fleet([(n, tokens[n]) for n in names], o.workers, o.ramp, settings)
            await fleet.go()
            out["all_connected_s"] = _rounded(
                await fleet.wait_connected(o.ramp + 30 + o.nodes / 50)
            )
            # held: it stays pending, the target of GetJob and ListJobs in the window
            probe_job = (await servers.submit(jobs, 1, o.job_runtime, 1, hold=True))[0]
            await asyncio.sleep(o.settle)
            target = (address, token)
            window = _scheduler_window(o, root, fleet, jobs, target, pid, metrics, probe_job)
            out.update(await window)
    finally:
        if server is not None:
            server.stop()
    return out


async def _scheduler_window(
    o: Options,
    root: Path,
    fleet: Fleet,
    jobs: pb_grpc.JobServiceStub,
    target: tuple[str, str],
    pid: int,
    metrics: str,
    probe_job: str,
) -> dict[str, Any]:
    """The measured window; ``target`` is the scheduler's address and an admin's token."""
    address, token = target
    shed_before = await _shed(metrics)
    fleet.set_phase(WINDOW)
    start = time.monotonic()
    end = start + o.window
    meter = ProcessMeter(pid) if pid else None
    if meter:
        meter.begin()
    loadgen_cpu = fleet.cpu_seconds()
    probes = UnaryProbes(address, token, probe_job, o.probe_interval)
    probing = asyncio.create_task(probes.run())
    ginfo = _ginfo_runs(o, servers.client_env(root, address, token), start, o.window)
    workload = asyncio.create_task(
        _at(start + o.window / 10, _jobs_and_stops(o, fleet, jobs, target, end))
    )
    await asyncio.sleep(max(0.0, end - time.monotonic()))
    fleet.set_phase(AFTER)
    out: dict[str, Any] = {"process": meter.end() if meter else None}
    out["loadgen_cpu_percent"] = round(100 * (fleet.cpu_seconds() - loadgen_cpu) / o.window, 1)
    out["connected_at_window_end"] = fleet.count(CONNECTED)
    shed_after = await _shed(metrics)
    out["telemetry_shed_window"] = (
        None if shed_before is None or shed_after is None else int(shed_after - shed_before)
    )
    probing.cancel()
    out["unary"] = probes.report()
    out["ginfo"] = await _ginfo_report(ginfo)
    submitted, submit_s, stopped, down = await workload
    stats = await fleet.finish()
    out["heartbeats"] = _heartbeats(stats, o.window, o.nodes)
    out["streams"] = _streams(stats)
    out["jobs"] = await _jobs_report(jobs, submitted, submit_s, stats)
    out["down"] = {
        "mode": o.stop_mode,
        "stopped": len(stopped),
        "marked_down": len(down),
        "seconds": sorted(round(s, 1) for s in down.values()),
        "max_s": round(max(down.values()), 1) if down else None,
        "node_timeout_s": _setting(o, "node_timeout", 30.0),
        "tick_interval_s": _setting(o, "tick_interval", 5.0),
    }
    return out


def _ginfo_runs(
    o: Options, env: dict[str, str], start: float, window: float
) -> list[asyncio.Task[float | None]]:
    """``--ginfo-runs`` runs of ``ginfo`` spread evenly over the window that began at ``start``."""
    return [
        asyncio.create_task(_at(start + window * (k + 1) / (o.ginfo_runs + 1), time_ginfo(env)))
        for k in range(o.ginfo_runs)
    ]


async def _ginfo_report(runs: list[asyncio.Task[float | None]]) -> dict[str, Any]:
    times = [t for t in await asyncio.gather(*runs) if t is not None]
    return {**quantiles(times), "failed": len(runs) - len(times)}


async def _shed(metrics: str) -> float | None:
    """rota_telemetry_shed_total now (None without a /metrics URL)."""
    if not metrics:
        return None
    return await asyncio.to_thread(servers.scrape, metrics, "rota_telemetry_shed_total")


async def _jobs_and_stops(
    o: Options,
    fleet: Fleet,
    jobs: pb_grpc.JobServiceStub,
    target: tuple[str, str],
    window_end: float,
) -> tuple[tuple[float, list[str]], float, list[str], dict[str, float]]:
    """Submit the jobs; once all have launch orders (or at three quarters of the window) stop
    idle nodes and time them until DOWN; wait for the jobs to complete. Everything ends by ``drain`` after the
    window."""
    deadline = window_end + o.drain
    submitted_at = time.monotonic()
    ids = await servers.submit(jobs, o.jobs, o.job_runtime, o.submit_batch) if o.jobs else []
    submit_s = time.monotonic() - submitted_at
    latest = window_end - o.window / 4
    while fleet.count(LAUNCHED) < len(ids) and time.monotonic() < latest:
        await asyncio.sleep(0.1)
    stopped = await fleet.stop_idle(o.stop_nodes, o.stop_mode) if o.stop_nodes else []
    watching = asyncio.create_task(watch_down(*target, stopped, deadline))
    while fleet.count(COMPLETED) < len(ids) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    return (submitted_at, ids), submit_s, stopped, await watching


def _heartbeats(stats: dict[str, Any], window: float, nodes: int) -> dict[str, Any]:
    """Heartbeats and keepalives of the window (``sent`` counts both, each gets a pong)."""
    sent, answered = stats["sent"][WINDOW], stats["answered"][WINDOW]
    interval, period = stats["heartbeat_interval"], stats["telemetry_period"]
    return {
        "interval_s": interval,
        "telemetry_period_s": period,
        "keepalive_interval_s": stats["keepalive_interval"],
        "expected_telemetry_per_s": round(nodes / period, 1) if period else None,
        "keepalives": stats["keepalives"][WINDOW],
        "sent": sent,
        "answered": answered,
        "sent_per_s": round(sent / window, 1),
        "answered_per_s": round(answered / window, 1),
        "answered_fraction": round(answered / sent, 4) if sent else None,
        "round_trip": quantiles(stats["rtts"]),
    }


def _streams(stats: dict[str, Any]) -> dict[str, Any]:
    return {
        "disconnects_window": stats["disconnects"][WINDOW],
        "disconnects_total": sum(stats["disconnects"]),
        "reconnects_window": stats["reconnects"][WINDOW],
        "reconnects_total": sum(stats["reconnects"]),
        "dial_failures": stats["dial_failures"],
        "dial_codes": stats["dial_codes"],
        "watchdog_drops": stats["watchdog_drops"],
    }


async def _jobs_report(
    jobs: pb_grpc.JobServiceStub,
    submitted: tuple[float, list[str]],
    submit_s: float,
    stats: dict[str, Any],
) -> dict[str, Any]:
    at, ids = submitted
    launched = [stats["launched"][i] - at for i in ids if i in stats["launched"]]
    completed = [stats["completed"][i] - at for i in ids if i in stats["completed"]]
    states: dict[str, int] = {}
    if ids:
        reply = await jobs.ListJobs(pb.ListJobsRequest(ids=ids, all_states=True), timeout=120)
        for job in reply.jobs:
            name = pb.JobState.Name(job.state)
            states[name] = states.get(name, 0) + 1
    return {
        "submitted": len(ids),
        "submit_s": round(submit_s, 2),
        "launched": len(launched),
        "all_launched_s": round(max(launched), 2) if ids and len(launched) == len(ids) else None,
        "launch_median_s": round(statistics.median(launched), 2) if launched else None,
        "on_stopped_nodes": stats["launched_on_stopped"],
        "completed": len(completed),
        "all_completed_s": round(max(completed), 2) if ids and len(completed) == len(ids) else None,
        "scheduler_states": states,
    }


async def _floor_phase(o: Options, root: Path, beats: dict[str, Any]) -> dict[str, Any]:
    """The floor's welcome and pongs give the periods the scheduler gave (``beats``)."""
    interval = beats["interval_s"] or 2.0
    welcome, pong = protocol.floor_replies(
        interval,
        _setting(o, "node_grace", 300.0),
        beats["telemetry_period_s"] or interval,
        beats["keepalive_interval_s"],
    )
    server = servers.start_floor(root, welcome, pong)
    await server.wait_ready()
    window = o.floor_window or o.window
    try:
        names = _names(o.nodes)
        fleet = Fleet([(n, "") for n in names], o.workers, o.ramp, NodeSettings(server.address))
        await fleet.go()
        all_connected = _rounded(await fleet.wait_connected(o.ramp + 30 + o.nodes / 50))
        await asyncio.sleep(o.settle)
        fleet.set_phase(WINDOW)
        meter = ProcessMeter(server.pid)
        meter.begin()
        probes = UnaryProbes(server.address, "", "0", o.probe_interval)
        probing = asyncio.create_task(probes.run())
        # any token will do: the floor reads none
        env = servers.client_env(root, server.address, "floor")
        ginfo = _ginfo_runs(o, env, time.monotonic(), window)
        await asyncio.sleep(window)
        fleet.set_phase(AFTER)
        process = meter.end()
        probing.cancel()
        ginfo_times = await _ginfo_report(ginfo)
        stats = await fleet.finish()
    finally:
        server.stop()
    return {
        "all_connected_s": all_connected,
        "process": process,
        "heartbeats": _heartbeats(stats, window, o.nodes),
        "streams": _streams(stats),
        "unary": probes.report(),
        "ginfo": ginfo_times,
    }


def _ratios(scheduler: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    s, f = scheduler["process"], floor["process"]
    if not s or not f:
        return {}
    return {
        key: round(s[key] / f[key], 2) if f[key] else None
        for key in ("cpu_percent", "rss_mean_mib", "rss_max_mib")
    }
