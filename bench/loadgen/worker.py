"""A worker process: one asyncio loop serving a share of the simulated nodes.

It talks to the orchestrator over a pipe: it sends ``("ready",)`` once its nodes exist, then
answers ``("go", t0)`` (start node i at ``t0 + ramp * i / total``), ``("stop", k, mode)`` (stop k
idle connected nodes, reply ``("stopped", names)``) and ``("finish",)`` (reply ``("result",
dict)``). The shared ``progress`` slots hold connected nodes, jobs launched, jobs completed and
broken streams, refreshed four times a second; ``phase`` is the orchestrator's current phase.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from multiprocessing.connection import Connection
from typing import Any

from bench.loadgen.node import NodeSettings, SimNode, Stats
from bench.loadgen.procfs import raise_open_files_limit

PROGRESS_SLOTS = 4  # connected, launched, completed, disconnects


def main(
    slot: int,
    nodes: list[tuple[int, str, str]],
    total: int,
    ramp: float,
    settings: NodeSettings,
    phase: Any,
    progress: Any,
    conn: Connection,
) -> None:
    """Entry point of the process (``nodes`` holds global index, name and join token)."""
    raise_open_files_limit()
    asyncio.run(_serve(slot, nodes, total, ramp, settings, phase, progress, conn))


async def _serve(
    slot: int,
    nodes: list[tuple[int, str, str]],
    total: int,
    ramp: float,
    settings: NodeSettings,
    phase: Any,
    progress: Any,
    conn: Connection,
) -> None:
    loop = asyncio.get_running_loop()
    stats = Stats()
    sims = [
        (index, SimNode(name, token, settings, stats, lambda: phase.value))
        for index, name, token in nodes
    ]
    commands: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
    loop.add_reader(conn.fileno(), lambda: commands.put_nowait(conn.recv()))
    conn.send(("ready",))
    tasks: list[asyncio.Task[None]] = []
    publisher = asyncio.create_task(_publish(slot, stats, progress))
    while True:
        command = await commands.get()
        if command[0] == "go":
            start = command[1]
            tasks = [
                asyncio.create_task(sim.run(start + ramp * index / max(total, 1)))
                for index, sim in sims
            ]
        elif command[0] == "stop":
            chosen = [sim for _, sim in sims if sim.idle and not sim.stopped][: command[1]]
            for sim in chosen:
                sim.stop(command[2])
            conn.send(("stopped", [sim.name for sim in chosen]))
        elif command[0] == "finish":
            break
    loop.remove_reader(conn.fileno())
    for _, sim in sims:
        sim.shutdown()
    if tasks:
        await asyncio.wait(tasks, timeout=10)
    publisher.cancel()
    conn.send(("result", asdict(stats)))


async def _publish(slot: int, stats: Stats, progress: Any) -> None:
    base = slot * PROGRESS_SLOTS
    while True:
        progress[base] = stats.connected
        progress[base + 1] = len(stats.launched)
        progress[base + 2] = len(stats.completed)
        progress[base + 3] = sum(stats.disconnects)
        await asyncio.sleep(0.25)


def merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Add up the workers' statistics."""
    out = asdict(Stats())
    for r in results:
        for key in ("sent", "keepalives", "answered", "disconnects", "reconnects"):
            out[key] = [a + b for a, b in zip(out[key], r[key], strict=True)]
        for key in ("dial_failures", "watchdog_drops", "launched_on_stopped", "kills", "connected"):
            out[key] += r[key]
        for code, count in r["dial_codes"].items():
            out["dial_codes"][code] = out["dial_codes"].get(code, 0) + count
        out["rtts"].extend(r["rtts"])
        out["launched"].update(r["launched"])
        out["completed"].update(r["completed"])
        out["heartbeat_interval"] = max(out["heartbeat_interval"], r["heartbeat_interval"])
        out["telemetry_period"] = max(out["telemetry_period"], r["telemetry_period"])
        out["keepalive_interval"] = max(out["keepalive_interval"], r["keepalive_interval"])
    out["rtts"].sort()
    return out
