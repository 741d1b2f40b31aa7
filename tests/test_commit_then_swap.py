"""Issue 23 [engine-split], commit then swap: every service builds new records, commits them and
only then swaps them into memory, so a commit that fails leaves memory exactly as it was (jobs,
nodes, reservations, the usage ledger) and answers the caller with the error; once the store
works again the same request does what it should."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from rota.scheduler.api.errors import INTERNAL_MESSAGE
from rota.scheduler.cluster.model import RESERVATION_HOLD, AdminState
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.reservations import ReservationRequest
from rota.states import JobState
from rota.v1 import rota_pb2 as pb
from tests.support.core import Harness
from tests.support.inprocess import InProcessScheduler
from tests.test_auth import with_node

ANN = Principal("ann")
ROOT = Principal("root", admin=True)
HOUR = 3600.0


class DiskFull(OSError):
    pass


def broken(*args: Any, **kwargs: Any) -> None:
    raise DiskFull("disk full")


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path)
    harness.connect("n1", gpus=2)
    harness.connect("n2", gpus=2)
    yield harness
    harness.store.close()


def memory(h: Harness) -> tuple[object, ...]:
    """Everything a failed commit must leave as it was, copied."""
    jobs = {i: dataclasses.replace(j) for i, j in h.s.model.jobs.items()}
    nodes = {n: dataclasses.replace(s) for n, s in h.s.model.nodes.items()}
    reservations = {n: dataclasses.replace(r) for n, r in h.s.reservations.live.items()}
    return jobs, nodes, reservations, copy.deepcopy(h.s.snapshots.usage.holding)


def running(h: Harness, **spec: object) -> str:
    job = h.submit(**spec)
    h.schedule()
    for node in h.s.model.jobs[int(job)].node_names:
        h.event(node, job, "STARTED")
    assert h.state(job) is JobState.RUNNING
    return job


def test_a_cancel_whose_commit_fails_changes_nothing_and_answers_the_error(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = running(h, gpus=1)
    waiting = h.submit(gpus=2, nodes=2)  # pending: the GPUs are taken
    before = memory(h)
    monkeypatch.setattr(h.store.jobs, "save", broken)
    with pytest.raises(DiskFull):
        asyncio.run(h.engine.jobs.cancel([busy, waiting], ANN, ""))
    assert memory(h) == before  # both still in the model, the running one still counted
    monkeypatch.undo()
    asyncio.run(h.engine.jobs.cancel([busy, waiting], ANN, ""))
    assert h.state(waiting) is JobState.CANCELLED and int(waiting) not in h.s.model.jobs
    assert h.state(busy) is JobState.COMPLETING


def test_a_hold_or_release_whose_commit_fails_changes_nothing(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    running(h, gpus=2, nodes=2)
    job = h.submit(gpus=1)
    before = memory(h)
    monkeypatch.setattr(h.store.jobs, "save", broken)
    with pytest.raises(DiskFull):
        asyncio.run(h.engine.jobs.control("hold", [job], ANN))
    assert memory(h) == before and not h.s.model.jobs[int(job)].held
    monkeypatch.undo()
    (result,) = asyncio.run(h.engine.jobs.control("hold", [job], ANN))
    assert result.ok and h.s.model.jobs[int(job)].held == "user"
    held = memory(h)
    monkeypatch.setattr(h.store.jobs, "save", broken)
    with pytest.raises(DiskFull):
        asyncio.run(h.engine.jobs.control("release", [job], ANN))
    assert memory(h) == held
    monkeypatch.undo()
    assert h.s.jobs.get(job)[0].held == "user", "the database agrees with memory"


def test_a_drain_whose_commit_fails_leaves_the_node_taking_jobs(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = memory(h)
    monkeypatch.setattr(h.store.nodes, "save", broken)
    with pytest.raises(DiskFull):
        asyncio.run(h.engine.nodes.drain_node("n1", "new cables", ROOT))
    assert memory(h) == before and h.s.model.nodes["n1"].schedulable
    job = h.submit(gpus=2)
    h.schedule()
    assert h.state(job) is JobState.CONFIGURING  # the node still takes jobs
    monkeypatch.undo()
    node, _status = asyncio.run(h.engine.nodes.drain_node("n1", "new cables", ROOT))
    assert node.admin_state is AdminState.DRAIN


def test_a_lost_node_whose_commit_fails_keeps_its_jobs_until_the_next_tick(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    gang = running(h, gpus=1, nodes=2, requeue=True)
    h.clock.now += h.config.node_timeout + 1
    h.tick()  # both nodes silent: DOWN, their jobs wait out the grace period
    assert not h.s.model.nodes["n1"].connected
    h.clock.now += h.config.node_grace + 1
    before = memory(h)
    monkeypatch.setattr(h.store.jobs, "save", broken)
    with pytest.raises(DiskFull):
        h.tick()
    assert memory(h) == before  # still RUNNING on both nodes, its GPUs still counted
    monkeypatch.undo()
    h.tick()
    record, events = h.s.jobs.get(gang)
    assert record.state is JobState.PENDING and record.allocation == []
    assert [e.new_state for e in events].count("NODE_FAIL") == 1, "a gang ends once"
    assert int(gang) not in h.s.snapshots.usage.holding


def test_a_reservation_end_whose_holds_fail_to_commit_changes_nothing(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = h.clock.now
    h.s.reservations.create(
        ReservationRequest("lab", now, now + HOUR, nodes=("n1",), users=("ann",)), ROOT
    )
    running(h, gpus=2, reservation="lab")
    job = h.submit(gpus=2, reservation="lab")  # waits for the first
    h.tick()  # the first tick after start-up holds jobs of reservations already gone
    h.clock.now += 2 * HOUR  # the window has ended
    before = memory(h)
    assert "lab" in h.s.reservations.live
    monkeypatch.setattr(h.store.jobs, "save", broken)
    with pytest.raises(DiskFull):
        h.s.reservations.advance(h.clock.now)
    assert memory(h) == before  # the reservation still known, the job not held
    monkeypatch.undo()
    h.s.reservations.advance(h.clock.now)
    assert "lab" not in h.s.reservations.live
    assert h.s.jobs.get(job)[0].held == RESERVATION_HOLD


def test_a_gang_rank_whose_end_fails_to_commit_is_counted_when_reported_again(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    gang = running(h, gpus=1, nodes=2)
    h.event("n1", gang, "EXITED", exit_code=0)
    before = memory(h)
    monkeypatch.setattr(h.store.jobs, "save", broken)
    with pytest.raises(DiskFull):
        h.event("n2", gang, "EXITED", exit_code=0)
    assert memory(h) == before  # RUNNING, one rank in, still counted by the usage ledger
    monkeypatch.undo()
    h.event("n2", gang, "EXITED", exit_code=0)  # the agent reports it again
    assert h.state(gang) is JobState.COMPLETED
    assert int(gang) not in h.s.snapshots.usage.holding


def test_a_plan_whose_commit_fails_feeds_nothing_to_the_usage_ledger(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = h.submit(gpus=1)
    monkeypatch.setattr(h.store.jobs, "save", broken)
    with pytest.raises(DiskFull):
        h.schedule()
    assert int(job) not in h.s.snapshots.usage.holding
    monkeypatch.undo()
    h.schedule()
    assert h.s.snapshots.usage.holding[int(job)] == ("ann", "ann", 1)


def test_a_request_whose_commit_fails_is_answered_internal_over_grpc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gcancel while the database refuses writes: INTERNAL with a message that says nothing
    changed (the cause goes to the scheduler's log), and the job is still pending."""

    async def main() -> None:
        async with InProcessScheduler(tmp_path) as sched:
            await with_node(sched)
            spec = pb.JobSpec(image="img", command=["true"], hold=True)
            sent = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)])
            job = (await sched.jobs.SubmitJobs(sent)).jobs[0].job_ids[0]
            monkeypatch.setattr(sched.store.jobs, "save", broken)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await sched.jobs.CancelJobs(pb.CancelJobsRequest(ids=[job]))
            assert refused.value.code() is grpc.StatusCode.INTERNAL
            assert refused.value.details() == INTERNAL_MESSAGE
            monkeypatch.undo()
            shown = await sched.jobs.GetJob(pb.GetJobRequest(id=job))
            assert shown.state_code == "PD"

    asyncio.run(main())
