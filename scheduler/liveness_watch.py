"""Liveness: silent nodes are marked DOWN when their timeout runs out, not at the next tick.

The watch sleeps until the first connected node could time out (at most ``tick_interval``),
then checks on the core thread (``AgentService.next_timeout``, ``lost_nodes``); a lost node's
orders go out, the stale streams close, and a pass is wanted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from rota.scheduler.core.agents import AgentService
from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core_thread import Executor

log = logging.getLogger("rota.scheduler")
LIVENESS_MIN_WAIT = 0.05  # seconds: the liveness check never spins


class LivenessWatch:
    """Runs the check above until ``stop``."""

    def __init__(
        self,
        executor: Executor,
        agents: AgentService,
        tick_interval: float,
        lost: Callable[[Orders], Awaitable[None]],
    ) -> None:
        self.executor = executor
        self.agents = agents
        self.tick_interval = tick_interval
        self.lost = lost  # sends a lost node's orders, closes stale streams, wants a pass
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="rota-liveness")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            try:
                due = await self.executor.background(self.agents.next_timeout)
                if due is not None and due < 0:
                    await self.lost(await self.executor.background(self.agents.lost_nodes))
                    due = 0.0  # look again at once (after the shortest wait)
            except Exception:
                log.exception("checking for lost nodes failed; retrying")
                due = None
            wait = self.tick_interval if due is None else min(due, self.tick_interval)
            await asyncio.sleep(max(wait, LIVENESS_MIN_WAIT) + LIVENESS_MIN_WAIT)
