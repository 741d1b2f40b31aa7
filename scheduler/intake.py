"""Agent messages waiting for the core thread: received on the event loop, applied in batches.

Telemetry:
A heartbeat is stamped (liveness) and answered (pong) the moment it arrives; its telemetry
waits here, still in its wire form, until a core-thread hop decodes and applies it with the
others buffered (a bounded number per hop, oldest first). Only the latest heartbeat of each node is kept: one that arrives
while its node's previous one still waits replaces it, never decoded, which happens only when
the core thread falls behind, and is counted.

Job events: queued on their own path, which telemetry never delays and nothing sheds, and
applied in arrival order, a bounded number per hop (one transaction each).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable

from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core.steps import CoreSteps, ReceivedBeat, ReceivedEvent
from rota.scheduler.core_thread import Executor

log = logging.getLogger("rota.scheduler")
TELEMETRY_BATCH_DELAY = 0.05  # seconds heartbeats gather before one core-thread hop
TELEMETRY_PER_HOP = 100  # heartbeats decoded and applied per core-thread hop (~0.2 ms each)
EVENTS_PER_HOP = 25  # job events applied (and stored in one transaction) per core-thread hop
BEHIND_LOG_INTERVAL = 10.0  # seconds between "behind on telemetry" warnings


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


class _Drainer:
    """A task that empties a queue in core-thread hops; started on demand, one at a time."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self.stopping = False

    def kick(self) -> None:
        if self._task is None and not self.stopping:
            self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            await self.drain()
        finally:
            self._task = None

    async def drain(self) -> None:
        raise NotImplementedError

    async def idle(self) -> None:
        """Wait until nothing waits to be applied (the task in progress finished)."""
        while self._task is not None:
            await asyncio.shield(self._task)

    async def stop(self) -> None:
        self.stopping = True
        if self._task is not None:
            await self._task


class TelemetryIntake(_Drainer):
    """Buffers heartbeats' telemetry and applies it (see the module doc); ``changed`` is told
    when what the policy sees changed."""

    def __init__(self, executor: Executor, steps: CoreSteps, changed: Callable[[], None]) -> None:
        super().__init__()
        self.executor = executor
        self.steps = steps
        self.changed = changed
        self.buffer = TelemetryBuffer()
        self._behind_logged = 0.0  # monotonic time of the last "behind" warning
        self._behind_since_log = 0

    def add(self, beat: ReceivedBeat) -> None:
        if self.buffer.add(beat):
            self._report_behind()
        self.kick()

    async def drain(self) -> None:
        """Apply buffered telemetry, one hop per batch of at most ``TELEMETRY_PER_HOP``
        heartbeats (a request queued meanwhile waits for one such hop, not for a backlog),
        until none waits; telemetry dies with the scheduler."""
        while len(self.buffer) and not self.stopping:
            if len(self.buffer) < TELEMETRY_PER_HOP:
                await asyncio.sleep(TELEMETRY_BATCH_DELAY)
            batch = self.buffer.take(TELEMETRY_PER_HOP)
            try:
                if await self.executor.background(self.steps.telemetry, batch):
                    self.changed()
            except Exception:
                log.exception("applying telemetry failed; it was dropped")

    def _report_behind(self) -> None:
        self._behind_since_log += 1
        now = time.monotonic()
        if now - self._behind_logged >= BEHIND_LOG_INTERVAL:
            log.warning(
                "scheduler behind on telemetry: %d heartbeat(s) shed since the last warning "
                "(%d in all); only the latest per node is applied",
                self._behind_since_log,
                self.buffer.superseded,
            )
            self._behind_logged = now
            self._behind_since_log = 0


class EventIntake(_Drainer):
    """Queues job events and applies them in arrival order; ``dispatch`` sends the orders
    they cause, ``changed`` is told when a pass is wanted."""

    def __init__(
        self,
        executor: Executor,
        steps: CoreSteps,
        dispatch: Callable[[Orders], None],
        changed: Callable[[], None],
    ) -> None:
        super().__init__()
        self.executor = executor
        self.steps = steps
        self.dispatch = dispatch
        self.changed = changed
        self._waiting: list[ReceivedEvent] = []

    def add(self, event: ReceivedEvent) -> None:
        self._waiting.append(event)
        self.kick()

    async def drain(self) -> None:
        """Up to ``EVENTS_PER_HOP`` waiting events per hop (requests queued meanwhile get
        their turn between hops), until none waits; all are applied, even when stopping."""
        while self._waiting:
            batch = self._waiting[:EVENTS_PER_HOP]
            del self._waiting[:EVENTS_PER_HOP]
            orders, wanted = await self.executor.background(self.steps.events, batch)
            self.dispatch(orders)
            if wanted:
                self.changed()
