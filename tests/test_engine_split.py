"""Issue 23 [engine-split]: commit, then swap (a failed commit changes nothing in memory and
answers an error), one authorization function, and the typed executor."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from rota.messages import AgentEvent
from rota.scheduler.agent_hub import AgentSession
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core import authz
from rota.scheduler.core.errors import AccessDenied
from rota.states import JobState
from tests.support.core import Harness


class DiskFull(OSError):
    pass


def failing_saves(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise DiskFull("disk full")

    monkeypatch.setattr(h.store.jobs, "save", broken)


def test_a_plan_whose_commit_fails_changes_nothing_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = Harness(tmp_path)
    h.connect("n1", gpus=2)
    job = h.submit(gpus=1)
    job_id = int(job)
    before = dataclasses.replace(h.s.model.jobs[job_id])
    plan = h.s.policy.decide(h.s.planner.snapshot())
    assert plan.placements  # the job fits
    failing_saves(h, monkeypatch)
    with pytest.raises(DiskFull):  # the error is answered, not swallowed
        h.s.planner.apply(plan)
    after = h.s.model.jobs[job_id]
    assert after == before  # still PENDING, attempt 0, no allocation
    assert after.state is JobState.PENDING and after.allocation == []
    monkeypatch.undo()
    orders = h.schedule()  # the next pass places it, as if the failed one never happened
    assert [o.job_id for _, o in orders] == [job_id]
    assert h.s.model.jobs[job_id].attempt == 1


def test_a_job_end_whose_commit_fails_leaves_the_job_running_in_memory_unacknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = Harness(tmp_path)
    h.connect("n1", gpus=2)
    job_id = int(h.submit(gpus=1))
    h.schedule()
    h.event("n1", str(job_id), "STARTED")
    before = dataclasses.replace(h.s.model.jobs[job_id])
    session = AgentSession("n1", h.sessions["n1"])
    h.engine.hub.attach(session)
    failing_saves(h, monkeypatch)

    async def deliver() -> None:
        h.engine.agents.agent_event(session, AgentEvent(job_id, 1, "EXITED", exit_code=0, time=0.0))
        await h.engine.events.idle()

    asyncio.run(deliver())
    assert session.outbox.empty()  # no acknowledgement: the agent sends the report again
    assert h.s.model.jobs[job_id] == before  # still RUNNING in memory, as in the database
    assert h.s.model.jobs[job_id].state is JobState.RUNNING


def test_node_administration_is_decided_by_authz_for_every_edge(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.connect("n1", gpus=2)
    ann = Principal("ann")

    async def attempt() -> None:
        with pytest.raises(AccessDenied, match="managing nodes is for admins only"):
            await h.engine.nodes.drain_node("n1", "mine now", ann)
        with pytest.raises(AccessDenied, match="managing GPUs is for admins only"):
            await h.engine.nodes.drain_gpu("n1", 0, "mine now", ann)
        with pytest.raises(AccessDenied, match="managing users"):
            await h.engine.users.audit(0, 10, ann)

    asyncio.run(attempt())
    assert h.s.model.nodes["n1"].schedulable  # nothing changed
    assert authz.authorize("nodes.manage", Principal("root", admin=True)) == ""


def test_a_token_refresh_never_shows_a_half_filled_map(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    token = h.s.users.add("ann")[1]
    seen: list[Principal | None] = []
    users = h.s.users
    store_users = users.store.users

    def users_while_authenticating() -> Any:
        seen.append(users.authenticate(token))  # what the event loop sees mid-refresh
        yield from store_users()

    users.store.users = users_while_authenticating  # type: ignore[method-assign]
    users.refresh()
    assert seen and seen[0] is not None and seen[0].user == "ann"
    assert users.authenticate(token) is not None
