"""The core thread's two queues: requests before background work, background work in order and
never starved by a flood of requests."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from rota.scheduler.cluster.model import JobEvent, JobRecord
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core_thread import CoreThread
from rota.scheduler.pass_loop import PLACEMENTS_PER_HOP
from rota.scheduler.policy.snapshot import Placement
from rota.states import JobState
from tests.support.core import Harness
from tests.support.counted import CountedExecutor


def test_requests_go_first_but_a_flood_of_them_never_starves_background_work() -> None:
    core = CoreThread(burst=2)
    gate = threading.Event()
    ran: list[str] = []
    started = threading.Event()
    core.submit(lambda: started.set() or gate.wait(), background=True)
    assert started.wait(10)  # the thread is busy: everything below queues
    done = [core.submit(lambda n=n: ran.append(f"bg{n}"), background=True) for n in range(3)]
    done += [core.submit(lambda n=n: ran.append(f"rq{n}")) for n in range(5)]
    gate.set()
    for future in done:
        future.result(timeout=10)
    core.shutdown()
    assert ran == ["rq0", "rq1", "bg0", "rq2", "rq3", "bg1", "rq4", "bg2"]


def test_an_exception_reaches_the_caller_and_the_thread_carries_on() -> None:
    core = CoreThread()

    def broken() -> None:
        raise ValueError("no such job")

    with pytest.raises(ValueError, match="no such job"):
        core.submit(broken).result(timeout=10)
    assert core.submit(lambda: 42, background=True).result(timeout=10) == 42
    core.shutdown()


def test_shutdown_runs_what_is_queued_then_refuses_more() -> None:
    core = CoreThread()
    gate, started = threading.Event(), threading.Event()
    core.submit(lambda: started.set() or gate.wait())
    assert started.wait(10)
    queued = [core.submit(lambda n=n: n, background=n % 2 == 0) for n in range(4)]
    threading.Timer(0.05, gate.set).start()
    core.shutdown()
    assert [f.result(timeout=0) for f in queued] == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="shut down"):
        core.submit(lambda: None)


def test_a_large_pass_launches_in_hops_and_a_request_answers_between_them(tmp_path: Path) -> None:
    """A pass placing 240 jobs commits them ``PLACEMENTS_PER_HOP`` per core-thread hop: a job
    lookup asked during the first hop is answered before the second, and every job that fits
    is launched once."""
    core = CountedExecutor()
    h = Harness(tmp_path, executor=core)
    for n in range(30):
        h.connect(f"n{n:02d}", gpus=8)  # 240 GPUs
    jobs = [h.submit(gpus=1) for _ in range(250)]
    planner = h.s.planner
    place = planner.place
    hops: list[str] = []
    inside, release = threading.Event(), threading.Event()

    def first_hop_waits(placements: Sequence[Placement]) -> Orders:
        hops.append(f"place {len(placements)}")
        if len(hops) == 1:
            inside.set()
            release.wait(30)
        return place(placements)

    planner.place = first_hop_waits  # type: ignore[method-assign]
    get = h.s.jobs.get
    hops_at_lookup: list[int] = []

    def counted_get(display_id: str) -> tuple[JobRecord, list[JobEvent]]:
        hops_at_lookup.append(len(hops))
        return get(display_id)

    h.s.jobs.get = counted_get  # type: ignore[method-assign]

    async def scenario() -> None:
        engine = h.engine
        launching = asyncio.create_task(engine.passes.run())
        try:
            assert await asyncio.to_thread(inside.wait, 30), "the pass never placed"
            lookup = asyncio.create_task(engine.jobs.get_job(jobs[-1], Principal("ann")))
            await core.queued(3)  # the snapshot, the first hop, then the lookup
            release.set()
            await asyncio.wait_for(lookup, timeout=20)
            await asyncio.wait_for(launching, timeout=60)
        finally:
            release.set()
            await engine.stop()

    asyncio.run(scenario())
    assert hops_at_lookup == [1], "the lookup waited for more than one hop"
    # the last ones come with the plan's remainder (Planner.apply)
    assert hops == [f"place {PLACEMENTS_PER_HOP}"] * ((240 - 1) // PLACEMENTS_PER_HOP)
    states = [h.state(j) for j in jobs]
    assert states.count(JobState.CONFIGURING) == 240
    assert states[-10:] == [JobState.PENDING] * 10
    stored = h.store.jobs.active()
    assert sum(j.state is JobState.CONFIGURING for j in stored) == 240
