"""The core thread's two queues: requests before background work, background work in order and
never starved by a flood of requests."""

from __future__ import annotations

import threading

import pytest

from rota.scheduler.core_thread import CoreThread


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
