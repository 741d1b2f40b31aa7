"""Agent telemetry waiting for the core thread: received on the event loop, applied in batches.

A heartbeat is stamped (liveness) and answered (pong) the moment it arrives; its telemetry
waits here, still in its wire form, until a core-thread hop decodes and applies it with the
others buffered (a bounded number per hop, oldest first). Only the latest heartbeat of each node is kept: one that arrives
while its node's previous one still waits replaces it, never decoded, which happens only when
the core thread falls behind, and is counted.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from rota.messages import Heartbeat

# A heartbeat as received: decoded already, or a call that decodes it (the wire message's).
Beat: TypeAlias = Heartbeat | Callable[[], Heartbeat]


@dataclass(frozen=True, slots=True)
class ReceivedBeat:
    """A heartbeat of stream ``session`` of ``node``, received at ``received``."""

    node: str
    session: int
    beat: Beat
    received: float

    def decoded(self) -> Heartbeat:
        return self.beat if isinstance(self.beat, Heartbeat) else self.beat()


class TelemetryBuffer:
    """The latest unapplied heartbeat per node (event loop only)."""

    def __init__(self) -> None:
        self._waiting: dict[str, ReceivedBeat] = {}
        self.superseded = 0  # heartbeats replaced before they were applied, since start

    def __len__(self) -> int:
        return len(self._waiting)

    def add(self, beat: ReceivedBeat) -> bool:
        """Buffer ``beat``; True when it replaced one of its node that was never applied."""
        replaced = self._waiting.pop(beat.node, None) is not None
        self._waiting[beat.node] = beat
        if replaced:
            self.superseded += 1
        return replaced

    def take(self, limit: int) -> list[ReceivedBeat]:
        """The ``limit`` oldest buffered (all when fewer), in arrival order; they leave the
        buffer."""
        if len(self._waiting) <= limit:
            batch = list(self._waiting.values())
            self._waiting.clear()
            return batch
        batch = list(itertools.islice(self._waiting.values(), limit))
        for beat in batch:
            del self._waiting[beat.node]
        return batch
