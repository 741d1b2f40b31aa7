"""Steps of the scheduler host's wall clock (NTP, ``date -s``, a resumed VM) never make a node
look silent: ``node_timeout`` and ``node_grace`` are measured on the monotonic clock, while
the times shown (last heartbeat, down since) stay wall-clock. Driven on the real services with
a fake pair of clocks (``clock.step`` moves the wall clock alone)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rota.messages import Heartbeat, Pong
from rota.scheduler.agent_hub import AgentSession
from rota.states import JobState
from tests.support.core import Harness

HOURS = 3 * 3600.0


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path, node_timeout=10.0, node_grace=60.0)


def running_job(h: Harness) -> str:
    h.connect("n1")
    job = h.submit(gpus=1, requeue=True)
    h.schedule()
    h.event("n1", job, "STARTED")
    return job


def beat(h: Harness) -> None:
    h.engine.steps.heartbeat("n1", h.sessions["n1"], Heartbeat())


def test_a_wall_clock_jump_forward_leaves_a_heartbeating_node_up_and_its_job_running(
    h: Harness,
) -> None:
    job = running_job(h)
    h.clock.now += 5
    beat(h)
    h.clock.step(HOURS)  # hours pass on the wall clock in an instant
    h.tick()
    node = h.s.model.nodes["n1"]
    assert node.connected, "a node heard from 5 s ago is not DOWN"
    assert h.state(job) is JobState.RUNNING and h.s.jobs.get(job)[0].attempt == 1
    assert h.s.agents.next_timeout() == pytest.approx(10.0)
    beat(h)
    assert node.last_heartbeat == h.clock.now, "the time shown is the wall clock's"
    # a real silence is still noticed: DOWN after node_timeout, requeued after node_grace
    last = h.clock.now
    h.clock.now += 11
    h.tick()
    assert not node.connected and h.s.model.nodes["n1"].down_since == last
    assert h.state(job) is JobState.RUNNING
    h.clock.now += 48  # 59 s of silence
    h.tick()
    assert h.state(job) is JobState.RUNNING
    h.clock.now += 2
    h.tick()
    record = h.s.jobs.get(job)[0]
    assert (record.state, record.attempt) == (JobState.PENDING, 1)


def test_a_wall_clock_jump_does_not_shorten_node_grace(h: Harness) -> None:
    job = running_job(h)
    h.s.agents.disconnected("n1", h.sessions["n1"])
    h.clock.now += 30
    h.clock.step(HOURS)
    h.tick()
    assert h.state(job) is JobState.RUNNING, "30 s into node_grace, whatever the wall clock says"
    h.clock.now += 31
    h.tick()
    assert h.state(job) is JobState.PENDING


def test_a_wall_clock_step_backward_does_not_delay_detection(h: Harness) -> None:
    job = running_job(h)
    h.clock.step(-HOURS)
    beat(h)
    assert h.s.model.nodes["n1"].last_heartbeat == h.clock.now, "shown as the wall clock says"
    h.clock.now += 11
    h.tick()
    assert not h.s.model.nodes["n1"].connected
    h.clock.step(-HOURS)
    h.clock.now += 50
    h.tick()
    assert h.state(job) is JobState.PENDING


def test_heartbeats_stamped_on_receipt_count_on_the_monotonic_clock(h: Harness) -> None:
    job = running_job(h)
    n1 = AgentSession("n1", h.sessions["n1"])

    async def scenario() -> None:
        h.clock.now += 8
        h.engine.agents.agent_heartbeat(n1, Heartbeat())
        assert isinstance(n1.outbox.get_nowait(), Pong)
        await h.engine.telemetry.idle()
        received = h.clock.now
        h.clock.step(HOURS)
        h.clock.now += 8  # 16 s after the hello, 8 s after the heartbeat
        h.tick()
        node = h.s.model.nodes["n1"]
        assert node.connected and node.last_heartbeat == received
        h.clock.now += 3
        h.tick()
        assert not node.connected and node.down_since == received
        assert h.state(job) is JobState.RUNNING

    asyncio.run(scenario())


def test_after_a_restart_node_grace_counts_from_the_start(h: Harness) -> None:
    # monotonic time does not survive the process: a node silent before the restart gets a
    # whole node_grace from the start, however long the wall clock says it has been away
    job = running_job(h)
    h.s.agents.disconnected("n1", h.sessions["n1"])
    h.clock.now += 55
    h.clock.step(HOURS)
    h.restart()
    assert h.s.model.nodes["n1"].down_since == h.clock.now, "shown DOWN since the start"
    h.clock.now += 59
    h.tick()
    assert h.state(job) is JobState.RUNNING
    h.clock.now += 2
    h.tick()
    assert h.state(job) is JobState.PENDING


def test_telemetry_freshness_is_judged_on_the_monotonic_clock(h: Harness) -> None:
    # the idle-GPU rules act only on fresh telemetry (3 heartbeat intervals, 6 s here)
    job = running_job(h)
    record = h.s.jobs.get(job)[0]
    beat(h)
    h.clock.step(HOURS)
    assert h.s.gpus.last_active(record, h.clock.now) is not None, "fresh, 0 s ago"
    h.clock.step(-2 * HOURS)
    h.clock.now += 7
    assert h.s.gpus.last_active(record, h.clock.now) is None, "7 s old: stale"
