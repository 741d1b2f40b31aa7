"""The attempt state machine: LAUNCHING -> RUNNING -> ENDED -> ACKED, one way only, and every
change under the attempt's lock (racing threads: exactly one wins, nothing half-written)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from rota.agent.runtime.attempts import Attempt, AttemptTable, Phase, TransitionError
from rota.messages import AgentEvent, EventKind, RunningAttempt


def _exited(code: int = 0) -> AgentEvent:
    return AgentEvent(7, 1, EventKind.EXITED, exit_code=code)


def _race(n: int, work: Callable[[int], object]) -> list[object]:
    """Run ``work(i)`` on ``n`` threads released together; their results by i."""
    start = threading.Barrier(n)
    results: list[object] = [None] * n

    def run(i: int) -> None:
        start.wait()
        results[i] = work(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_an_attempt_runs_ends_and_is_acknowledged() -> None:
    att = Attempt(7, 1, "7", gpus=(0, 1))
    assert att.phase is Phase.LAUNCHING and att.view() == RunningAttempt(7, 1, "", False)
    att.created("c1")
    att.started(deadline=1060.0)
    assert att.phase is Phase.RUNNING and att.deadline == 1060.0
    assert att.view() == RunningAttempt(7, 1, "c1", True)
    att.end(_exited(3))
    assert att.phase is Phase.ENDED and att.final == _exited(3)
    assert att.view() == RunningAttempt(7, 1, "c1", False)
    att.acked()
    assert att.phase is Phase.ACKED


def test_an_attempt_that_could_not_start_ends_from_launching() -> None:
    att = Attempt(7, 1)
    failed = AgentEvent(7, 1, EventKind.LAUNCH_FAILED, message="no such image")
    att.end(failed)
    assert att.phase is Phase.ENDED and att.final == failed


@pytest.mark.parametrize(
    ("steps", "illegal"),
    [
        ([], lambda a: a.started(0.0)),  # no container yet
        ([], lambda a: a.acked()),  # nothing reported
        (["created", "started"], lambda a: a.started(0.0)),  # started twice
        (["created", "started"], lambda a: a.created("c2")),  # a second container
        (["created", "started"], lambda a: a.acked()),  # still running
        (["created", "started", "end"], lambda a: a.end(_exited(9))),  # a second final
        (["created", "started", "end", "acked"], lambda a: a.end(_exited(9))),
        (["created", "started", "end", "acked"], lambda a: a.acked()),
    ],
)
def test_an_illegal_transition_is_refused_and_changes_nothing(
    steps: list[str], illegal: Callable[[Attempt], None]
) -> None:
    att = Attempt(7, 1)
    do = {
        "created": lambda: att.created("c1"),
        "started": lambda: att.started(99.0),
        "end": lambda: att.end(_exited(0)),
        "acked": att.acked,
    }
    for step in steps:
        do[step]()
    before = (att.phase, att.container_id, att.deadline, att.final)
    with pytest.raises(TransitionError):
        illegal(att)
    assert (att.phase, att.container_id, att.deadline, att.final) == before


def test_the_first_stop_wins_and_an_ended_attempt_is_not_stopped() -> None:
    att = Attempt(7, 1)
    att.created("c1")
    att.started(0.0)
    assert att.stop(EventKind.LOST, "fenced: no contact")
    assert not att.stop(EventKind.KILLED)  # a kill after the fence keeps the fence's report
    assert (att.stop_kind, att.stop_reason) == (EventKind.LOST, "fenced: no contact")
    with pytest.raises(TransitionError):
        att.stop(EventKind.EXITED)  # not a way to stop
    ended = Attempt(8, 1)
    ended.end(_exited())
    assert not ended.stop(EventKind.KILLED) and ended.stop_kind is None


def _one_race(kinds: list[EventKind]) -> None:
    att = Attempt(7, 1)
    att.created("c1")
    att.started(0.0)
    won = _race(len(kinds), lambda i: att.stop(kinds[i], f"reason {i}"))
    assert won.count(True) == 1
    winner = won.index(True)
    assert (att.stop_kind, att.stop_reason) == (kinds[winner], f"reason {winner}")

    def end(i: int) -> bool:
        try:
            att.end(_exited(i))
        except TransitionError:
            return False
        return True

    ended = _race(12, end)
    assert ended.count(True) == 1
    assert att.final == _exited(ended.index(True))


def test_racing_stops_and_ends_leave_exactly_one_winner() -> None:
    for _ in range(20):
        _one_race([EventKind.KILLED, EventKind.TIMED_OUT, EventKind.LOST] * 4)


def test_the_table_holds_one_attempt_per_key_and_acknowledges_it_once() -> None:
    table = AttemptTable()
    claims = _race(12, lambda i: table.claim(Attempt(7, 1, display_id=f"try{i}", gpus=(i,))))
    assert claims.count(None) == 1
    held = table.get(7, 1)
    assert held is not None and all(c is None or c is held for c in claims)
    assert table.gpu_jobs() == {held.gpus[0]: held.display_id}
    assert table.ack(7, 1) is None  # no final report yet: kept
    held.created("c1")
    held.started(0.0)
    assert table.strays({(7, 1)}) == [] and table.strays(set()) == [held]
    held.end(_exited(0))
    assert table.finals() == [_exited(0)] and table.gpu_jobs() == {}
    acked = _race(12, lambda i: table.ack(7, 1))
    assert [a for a in acked if a is not None] == [held]
    assert held.phase is Phase.ACKED and table.views() == [] and table.finals() == []
