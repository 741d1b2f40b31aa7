"""The heartbeat path off the core thread: liveness stamped at receipt, pongs at once,
telemetry applied in batches with only the latest per node kept when the core falls behind."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from rota.messages import GpuTelemetry, Heartbeat, Pong
from rota.scheduler.engine import AgentSession
from tests.support.core import Harness


def busy_core(h: Harness) -> tuple[threading.Event, asyncio.Future[bool]]:
    """Occupy the engine's core thread until the returned event is set."""
    gate = threading.Event()
    return gate, asyncio.ensure_future(h.engine._core(gate.wait))


def test_heartbeat_waiting_for_a_busy_core_keeps_its_node_alive(tmp_path: Path) -> None:
    h = Harness(tmp_path, node_timeout=10.0)
    h.connect("n1")
    h.connect("n2")
    n1 = AgentSession("n1", h.sessions["n1"])

    async def scenario() -> None:
        gate, blocked = busy_core(h)
        h.clock.now += 8
        received = h.clock.now
        h.engine.agent_heartbeat(n1, Heartbeat(gpus=(GpuTelemetry(0, utilization=40),)))
        assert isinstance(n1.outbox.get_nowait(), Pong)  # answered before any core work
        h.clock.now += 8  # 16 s since the hello, 8 s since n1's heartbeat arrived
        h.tick()  # the lost-node check, while n1's telemetry still waits for the core
        nodes = h.s.model.nodes
        assert nodes["n1"].connected and not nodes["n2"].connected
        assert nodes["n1"].telemetry == ()  # not applied yet
        gate.set()
        await blocked
        while h.engine._telemetry_task is not None:
            await asyncio.sleep(0.01)
        assert nodes["n1"].telemetry[0].utilization == 40
        assert nodes["n1"].telemetry_time == received  # stamped at receipt, not when applied

    asyncio.run(scenario())


def test_a_core_that_falls_behind_sheds_old_telemetry_and_counts_it(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.connect("n1")
    n1 = AgentSession("n1", h.sessions["n1"])

    async def scenario() -> None:
        gate, blocked = busy_core(h)
        for load in (10, 20, 30):
            h.engine.agent_heartbeat(n1, Heartbeat(gpus=(GpuTelemetry(0, utilization=load),)))
        assert [type(n1.outbox.get_nowait()) for _ in range(3)] == [Pong] * 3
        assert h.engine.telemetry_dropped == 2
        gate.set()
        await blocked
        while h.engine._telemetry_task is not None:
            await asyncio.sleep(0.01)
        assert h.s.model.nodes["n1"].telemetry[0].utilization == 30

    asyncio.run(scenario())
