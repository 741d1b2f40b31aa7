"""The fence's timings on disk: a restarted agent takes them only from the same boot."""

from __future__ import annotations

from pathlib import Path

from rota.agent.fence import SelfFence, Step
from rota.agent.fence_record import FenceRecord


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _welcomed(clock: FakeClock) -> SelfFence:
    fence = SelfFence(kill_grace=10.0, monotonic=clock)
    fence.hello_sent()
    fence.welcomed(node_grace=60.0, node_timeout=30.0)
    return fence


def test_a_restarted_agent_counts_from_the_contact_before_the_restart(tmp_path: Path) -> None:
    clock = FakeClock()
    FenceRecord(tmp_path / "fence.json", lambda: "boot-1").save(_welcomed(clock))
    clock.now += 50.0  # restarted 50 s later, the scheduler still silent
    again = SelfFence(kill_grace=10.0, monotonic=clock)
    assert FenceRecord(tmp_path / "fence.json", lambda: "boot-1").restore(again)
    assert again.times() == {Step.TERM: 1045.0, Step.KILL: 1055.0}
    assert again.due() is Step.TERM


def test_another_boot_or_no_record_restores_nothing(tmp_path: Path) -> None:
    clock = FakeClock()
    FenceRecord(tmp_path / "fence.json", lambda: "boot-1").save(_welcomed(clock))
    fresh = SelfFence(kill_grace=10.0, monotonic=clock)
    assert not FenceRecord(tmp_path / "fence.json", lambda: "boot-2").restore(fresh)
    assert not FenceRecord(tmp_path / "none.json", lambda: "boot-1").restore(fresh)
    assert fresh.due() is None


def test_contact_is_written_at_most_once_a_second(tmp_path: Path) -> None:
    clock = FakeClock()
    fence = _welcomed(clock)
    record = FenceRecord(tmp_path / "fence.json", lambda: "boot-1")
    record.save(fence)
    clock.now += 0.5
    fence.asked()
    fence.answered()
    record.save(fence)  # 0.5 s newer: not written (older on disk only fences earlier)
    restored = SelfFence(kill_grace=10.0, monotonic=clock)
    record.restore(restored)
    assert restored.contact == 1000.0
    clock.now += 0.5
    fence.asked()
    fence.answered()
    record.save(fence)
    record.restore(again := SelfFence(kill_grace=10.0, monotonic=clock))
    assert again.contact == 1001.0
