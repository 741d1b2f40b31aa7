"""The agent reads time only from the clocks it is given: its self-fence decision driven by a
fake clock, without sleeping."""

from __future__ import annotations

import pytest

from rota.agent.fence import SelfFence


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_fences_once_when_the_scheduler_was_away_long_enough() -> None:
    clock = FakeClock()
    fence = SelfFence(kill_grace=10.0, monotonic=clock)
    fence.welcomed(node_grace=120.0)  # the scheduler may rerun the jobs after 120 s of silence
    fence.lost()
    assert fence.fence_after() == 80.0  # 30 s for the keepalive and 10 s to stop come off

    clock.now += 79.0
    assert fence.due() is None
    clock.now += 1.0
    assert fence.due() == 80.0
    clock.now += 60.0
    assert fence.due() is None  # the jobs are stopped once per loss of contact


def test_a_welcome_ends_the_countdown() -> None:
    clock = FakeClock()
    fence = SelfFence(kill_grace=10.0, monotonic=clock)
    fence.welcomed(node_grace=120.0)
    fence.lost()
    clock.now += 70.0
    fence.welcomed(node_grace=120.0)  # reconnected in time
    clock.now += 500.0
    assert fence.due() is None

    fence.lost()  # a new loss counts from its own start
    clock.now += 79.0
    assert fence.due() is None
    clock.now += 1.0
    assert fence.due() == 80.0


def test_short_grace_fences_halfway_and_no_grace_never() -> None:
    clock = FakeClock()
    fence = SelfFence(kill_grace=10.0, monotonic=clock)
    fence.welcomed(node_grace=24.0)
    fence.lost()
    clock.now += 11.9
    assert fence.due() is None
    clock.now += 0.1
    assert fence.due() == pytest.approx(12.0)  # half the grace when the margin would leave nothing

    fence.welcomed(node_grace=0.0)  # 0: the scheduler waits forever, so the agent never fences
    fence.lost()
    clock.now += 10_000.0
    assert fence.due() is None


def test_not_connected_yet_is_not_a_loss() -> None:
    clock = FakeClock()
    fence = SelfFence(kill_grace=10.0, monotonic=clock)
    fence.welcomed(node_grace=120.0)
    clock.now += 10_000.0
    assert fence.due() is None
