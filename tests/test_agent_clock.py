"""The agent reads time only from the clocks it is given: its self-fence decision driven by a
fake clock, without sleeping."""

from __future__ import annotations

from rota.agent.fence import SelfFence, Step


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _welcomed(clock: FakeClock, grace: float, timeout: float = 30.0) -> SelfFence:
    fence = SelfFence(kill_grace=10.0, monotonic=clock)
    fence.hello_sent()
    clock.now += 1.0  # the welcome comes a second after the hello went out
    fence.welcomed(node_grace=grace, node_timeout=timeout)
    return fence


def test_counts_from_the_last_message_the_scheduler_answered_not_from_noticing() -> None:
    clock = FakeClock()
    fence = _welcomed(clock, grace=120.0)
    fence.asked()  # a heartbeat goes out at 1001 ...
    sent = clock.now
    clock.now += 3.0
    fence.answered()  # ... and its pong comes at 1004: the scheduler had it at 1001 or later
    assert fence.contact == sent
    # SIGKILL 5 s before the scheduler may requeue, SIGTERM kill_grace before that
    assert fence.times() == {Step.TERM: sent + 105.0, Step.KILL: sent + 115.0}

    fence.asked()  # the scheduler freezes: this heartbeat is never answered
    clock.now = sent + 104.9
    assert fence.due() is None
    clock.now = sent + 105.0
    assert fence.due() is Step.TERM
    assert fence.due() is None  # once per contact
    assert fence.wait() == 1.0  # SIGKILL is 10 s away: looks again within a second
    clock.now = sent + 115.0
    assert fence.due() is Step.KILL
    clock.now += 600.0
    assert fence.due() is None


def test_the_welcome_counts_from_the_hello() -> None:
    clock = FakeClock()
    fence = _welcomed(clock, grace=60.0)
    assert fence.contact == 1000.0  # when the hello went out, not when the welcome came


def test_contact_again_starts_a_new_countdown() -> None:
    clock = FakeClock()
    fence = _welcomed(clock, grace=120.0)
    clock.now += 110.0
    assert fence.due() is Step.TERM
    fence.hello_sent()  # reconnected in time
    fence.welcomed(node_grace=120.0, node_timeout=30.0)
    clock.now += 104.0
    assert fence.due() is None
    clock.now += 1.0
    assert fence.due() is Step.TERM


def test_kill_grace_is_shortened_to_start_no_sooner_than_node_timeout() -> None:
    clock = FakeClock()
    fence = _welcomed(clock, grace=24.0, timeout=3.0)
    assert fence.kill_grace == 10.0  # 24 - 5 - 3 = 16 s of room: it fits
    fence.welcomed(node_grace=9.0, node_timeout=3.0)
    assert fence.kill_grace == 1.0  # 9 - 5 - 3: shortened
    assert fence.times() == {Step.TERM: 1003.0, Step.KILL: 1004.0}
    fence.welcomed(node_grace=8.0, node_timeout=3.0)
    assert fence.kill_grace == 0.0  # SIGKILL at node_timeout of silence


def test_no_grace_never_fences_and_not_welcomed_is_not_a_loss() -> None:
    clock = FakeClock()
    fence = SelfFence(kill_grace=10.0, monotonic=clock)
    clock.now += 10_000.0
    assert fence.due() is None  # never welcomed
    fence.welcomed(node_grace=0.0)  # 0: the scheduler waits forever
    clock.now += 10_000.0
    assert fence.due() is None
