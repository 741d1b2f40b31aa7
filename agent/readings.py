"""What the agent last read from its GPUs and what its link did since start, for its /metrics.

The heartbeat thread records each GPU sample (with job ids filled in) and each heartbeat sent;
the link thread records each welcome. ``now()`` is one consistent, immutable view of all of it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

from rota.messages import GpuTelemetry


@dataclass(frozen=True, slots=True)
class Readings:
    """``gpus``: the latest sample (host indices) taken at ``sampled_at`` (Unix seconds, 0:
    none yet); ``welcomes``: streams the scheduler accepted, so reconnects are one fewer."""

    gpus: tuple[GpuTelemetry, ...] = ()
    sampled_at: float = 0.0
    heartbeats_sent: int = 0
    welcomes: int = 0

    @property
    def reconnects(self) -> int:
        return max(0, self.welcomes - 1)


class AgentReadings:
    """The agent's latest ``Readings``. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._now = Readings()

    def now(self) -> Readings:
        return self._now

    def sampled(self, gpus: tuple[GpuTelemetry, ...], at: float) -> None:
        with self._lock:
            self._now = replace(self._now, gpus=gpus, sampled_at=at)

    def heartbeat_sent(self) -> None:
        with self._lock:
            self._now = replace(self._now, heartbeats_sent=self._now.heartbeats_sent + 1)

    def welcomed(self) -> None:
        with self._lock:
            self._now = replace(self._now, welcomes=self._now.welcomes + 1)
