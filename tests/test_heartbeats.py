"""The heartbeat path off the core thread: liveness stamped at receipt, pongs at once,
telemetry applied in batches with only the latest per node kept when the core falls behind."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import pytest

from rota.messages import GpuTelemetry, Heartbeat, Hello, Pong, Welcome
from rota.scheduler.agent_hub import AgentSession
from rota.scheduler.intake import TELEMETRY_PER_HOP
from rota.scheduler.metrics import SchedulerMetrics
from tests.support.core import Harness, inventory
from tests.support.counted import CountedExecutor


def busy_core(h: Harness) -> tuple[threading.Event, asyncio.Future[bool]]:
    """Occupy the engine's core thread until the returned event is set."""
    gate = threading.Event()
    return gate, asyncio.ensure_future(h.engine.core.call(gate.wait))


def period_of(pong: object) -> float:
    assert isinstance(pong, Pong)
    return pong.telemetry_period


def test_heartbeat_waiting_for_a_busy_core_keeps_its_node_alive(tmp_path: Path) -> None:
    h = Harness(tmp_path, node_timeout=10.0)
    h.connect("n1")
    h.connect("n2")
    n1 = AgentSession("n1", h.sessions["n1"])

    async def scenario() -> None:
        gate, blocked = busy_core(h)
        h.clock.now += 8
        received = h.clock.now
        h.engine.agents.agent_heartbeat(n1, Heartbeat(gpus=(GpuTelemetry(0, utilization=40),)))
        assert isinstance(n1.outbox.get_nowait(), Pong)  # answered before any core work
        h.clock.now += 8  # 16 s since the hello, 8 s since n1's heartbeat arrived
        h.tick()  # the lost-node check, while n1's telemetry still waits for the core
        nodes = h.s.model.nodes
        assert nodes["n1"].connected and not nodes["n2"].connected
        assert nodes["n1"].telemetry == ()  # not applied yet
        gate.set()
        await blocked
        await h.engine.telemetry.idle()
        assert nodes["n1"].telemetry[0].utilization == 40
        assert nodes["n1"].telemetry_time == received  # stamped at receipt, not when applied

    asyncio.run(scenario())


def test_a_core_that_falls_behind_sheds_old_telemetry_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness(tmp_path)
    h.connect("n1")
    n1 = AgentSession("n1", h.sessions["n1"])

    async def scenario() -> None:
        gate, blocked = busy_core(h)
        for load in (10, 20, 30):
            h.engine.agents.agent_heartbeat(
                n1, Heartbeat(gpus=(GpuTelemetry(0, utilization=load),))
            )
        assert [type(n1.outbox.get_nowait()) for _ in range(3)] == [Pong] * 3
        assert h.engine.telemetry.buffer.superseded == 2
        gate.set()
        await blocked
        await h.engine.telemetry.idle()
        assert h.s.model.nodes["n1"].telemetry[0].utilization == 30
        scrape = SchedulerMetrics().render(await h.engine.metrics_sample()).decode()
        assert "rota_telemetry_shed_total 2.0" in scrape
        assert "rota_telemetry_waiting 0.0" in scrape

    with caplog.at_level(logging.WARNING, logger="rota.scheduler"):
        asyncio.run(scenario())
    assert "scheduler behind on telemetry" in caplog.text


def test_a_telemetry_backlog_is_applied_in_bounded_hops_oldest_first(tmp_path: Path) -> None:
    core = CountedExecutor()
    h = Harness(tmp_path, executor=core)
    names = [f"n{i:03d}" for i in range(TELEMETRY_PER_HOP * 2 + 10)]
    for name in names:
        h.connect(name)
    nodes = h.s.model.nodes

    async def scenario() -> None:
        gate, blocked = busy_core(h)
        for name in names:
            session = AgentSession(name, h.sessions[name])
            h.engine.agents.agent_heartbeat(
                session, Heartbeat(gpus=(GpuTelemetry(0, utilization=7),))
            )
        await core.queued(2)  # the intake's first hop is queued, behind the busy core

        def applied() -> list[str]:
            return [n for n in names if nodes[n].telemetry]

        request = asyncio.ensure_future(h.engine.core.call(applied))
        background = asyncio.ensure_future(h.engine.core.background(applied))
        await core.queued(4)  # both calls queued, behind the first hop
        gate.set()
        await blocked
        assert await request == []  # a request goes before background work
        # background work queued behind the backlog ran after one bounded hop: the oldest
        assert await background == names[:TELEMETRY_PER_HOP]
        await h.engine.telemetry.idle()
        assert all(nodes[n].telemetry[0].utilization == 7 for n in names)
        assert h.engine.telemetry.buffer.superseded == 0

    asyncio.run(scenario())


def test_telemetry_period_stretches_with_the_node_count_and_keepalives_keep_the_timeout(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path, heartbeat_interval=1.0, max_telemetry_rate=10.0, node_timeout=12.0)

    async def scenario() -> None:
        sessions = [
            await h.engine.agents.agent_connect(Hello(f"n{i}", "tok", inventory(1)))
            for i in range(30)
        ]
        welcomes = [s.outbox.get_nowait() for s in sessions]
        assert all(isinstance(w, Welcome) for w in welcomes)
        periods = [w.telemetry_period for w in welcomes]  # type: ignore[union-attr]
        assert periods[0] == periods[9] == 1.0  # 10 nodes at 10/s: one each per second
        assert periods[19] == 2.0 and periods[29] == 3.0
        assert {w.keepalive_interval for w in welcomes} == {4.0}  # type: ignore[union-attr]
        h.engine.agents.agent_keepalive(sessions[0])
        assert period_of(sessions[0].outbox.get_nowait()) == 3.0
        for session in sessions[5:]:
            await h.engine.agents.agent_gone(session)
        h.engine.agents.agent_heartbeat(sessions[0], Heartbeat())
        assert period_of(sessions[0].outbox.get_nowait()) == 1.0
        await h.engine.stop()

    asyncio.run(scenario())


def test_a_silent_node_is_down_when_its_timeout_runs_out_not_at_the_next_tick(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path, node_timeout=10.0, tick_interval=3600.0)
    h.connect("n1")
    h.connect("n2")
    n2 = AgentSession("n2", h.sessions["n2"])

    async def scenario() -> None:
        h.clock.now += 9.7  # n1 times out in 0.3 s
        h.engine.agents.agent_keepalive(n2)  # n2 was heard from just now
        h.engine.start()
        # the first pass's apply hop is queued behind the watch's first check
        await h.engine.passes.passes_done(1)
        assert h.s.model.nodes["n1"].connected
        h.clock.now += 0.6
        # the watch wakes when n1's 0.3 s run out; a lost node wants a pass
        await asyncio.wait_for(h.engine.passes.passes_done(2), 5.0)
        nodes = h.s.model.nodes
        assert not nodes["n1"].connected  # the tick (hourly here) never ran
        assert nodes["n2"].connected
        await h.engine.stop()

    asyncio.run(scenario())
