"""When each agent stream was last heard from, stamped on receipt.

The one piece of scheduler state written outside the core thread: the event loop stamps a
node the moment any message of its stream arrives, before that message waits for the core
thread, and the core thread reads the stamps when it looks for lost nodes. Each stamp is one
dict assignment of an immutable pair, atomic under the GIL, so no lock is needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from rota.scheduler.config import SchedulerConfig


class Stamp(NamedTuple):
    """When a message arrived: ``wall`` (shown, stored) and ``monotonic`` (for durations)."""

    wall: float
    monotonic: float


class Liveness:
    """Receipt stamps per node: ``(session, Stamp)`` of the last message of that session.
    ``clock`` is the wall clock, ``monotonic`` the clock silence is measured on."""

    def __init__(self, clock: Callable[[], float], monotonic: Callable[[], float]) -> None:
        self.clock = clock
        self.monotonic = monotonic
        self._seen: dict[str, tuple[int, Stamp]] = {}

    def stamp(self, node: str, session: int) -> Stamp:
        """Record that ``session`` of ``node`` was heard from now (event loop); returns now."""
        now = Stamp(self.clock(), self.monotonic())
        self._seen[node] = (session, now)
        return now

    def seen(self, node: str, session: int) -> Stamp | None:
        """When ``session`` of ``node`` was last heard from, None if never (any thread)."""
        entry = self._seen.get(node)
        if entry is None or entry[0] != session:
            return None
        return entry[1]


def telemetry_period(config: SchedulerConfig, nodes: int) -> float:
    """Seconds between telemetry heartbeats of each of ``nodes`` connected agents, so that
    all of them together send at most ``max_telemetry_rate`` per second (never more often than
    ``heartbeat_interval``)."""
    return max(config.heartbeat_interval, nodes / config.max_telemetry_rate)


def keepalive_interval(config: SchedulerConfig) -> float:
    """Seconds an agent may stay silent: a third of ``node_timeout``, so a node whose
    telemetry period is longer still sends two messages more before it would be DOWN."""
    return config.node_timeout / 3
