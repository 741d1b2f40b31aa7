"""Job events from agents: applied in bounded batches, each stored in one transaction before
any of its acknowledgements leaves, so a burst of job ends neither holds the core thread for
long nor gets acknowledged without being stored."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rota.messages import AgentEvent, EventAck, LaunchOrder
from rota.scheduler.agent_hub import AgentSession
from rota.scheduler.intake import EVENTS_PER_HOP
from rota.states import JobState
from tests.support.core import Harness
from tests.support.counted import CountedExecutor
from tests.test_heartbeats import busy_core


def running(h: Harness, count: int) -> dict[int, AgentSession]:
    """``count`` one-GPU jobs started on 8-GPU nodes; each job's node session, by job id.
    The sessions are the engine's, so acknowledgements reach their outboxes."""
    nodes = [f"n{i}" for i in range(-(-count // 8))]
    for node in nodes:
        h.connect(node, gpus=8)
    for _ in range(count):
        h.submit(gpus=1)
    sessions = {n: AgentSession(n, h.sessions[n]) for n in nodes}
    for session in sessions.values():
        h.engine.hub.attach(session)
    placed: dict[int, AgentSession] = {}
    for node, order in h.schedule():
        assert isinstance(order, LaunchOrder)
        placed[order.job_id] = sessions[node]
        h.event(node, str(order.job_id), "STARTED")
    assert len(placed) == count
    return placed


def exited(job_id: int) -> AgentEvent:
    return AgentEvent(job_id, 1, "EXITED", exit_code=0, time=0.0)


def acks(sessions: set[AgentSession]) -> set[int]:
    out = set()
    for session in sessions:
        while not session.outbox.empty():
            order = session.outbox.get_nowait()
            if isinstance(order, EventAck):
                out.add(order.job_id)
    return out


def test_a_burst_of_job_ends_is_applied_in_batches_after_requests(
    tmp_path: Path,
) -> None:
    core = CountedExecutor()
    h = Harness(tmp_path, executor=core)
    jobs = running(h, EVENTS_PER_HOP * 2 + 10)

    async def scenario() -> None:
        gate, blocked = busy_core(h)
        for job_id, session in jobs.items():
            h.engine.agents.agent_event(session, exited(job_id))
        await core.queued(2)  # the intake's first batch is queued, behind the busy core
        live = h.s.model.jobs  # ended jobs leave the live model

        def ended() -> int:
            return sum(i not in live for i in jobs)

        request = asyncio.ensure_future(h.engine.core.call(ended))
        background = asyncio.ensure_future(h.engine.core.background(ended))
        await core.queued(4)  # both calls queued, behind the first batch in arrival order
        gate.set()
        await blocked
        assert await request == 0  # a request goes before background work
        # background work queued behind the burst ran after its first batch, not all of it
        assert await background == EVENTS_PER_HOP
        await h.engine.events.idle()

    asyncio.run(scenario())
    assert acks(set(jobs.values())) == set(jobs)
    h.restart()
    assert all(h.state(str(j)) is JobState.COMPLETED for j in jobs)


def test_job_ends_whose_batch_cannot_be_stored_are_not_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness(tmp_path)
    jobs = running(h, 12)
    save = h.store.jobs.save

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    async def deliver() -> None:
        for job_id, session in jobs.items():
            h.engine.agents.agent_event(session, exited(job_id))
        await h.engine.events.idle()

    monkeypatch.setattr(h.store.jobs, "save", broken)
    asyncio.run(deliver())
    assert acks(set(jobs.values())) == set()  # the agents keep their reports and send them again
    assert "storing 12 job event(s) failed; none is acknowledged" in caplog.text
    monkeypatch.setattr(h.store.jobs, "save", save)
    h.restart()  # what was stored: nothing of the failed batch
    assert all(h.state(str(j)) is JobState.RUNNING for j in jobs)
