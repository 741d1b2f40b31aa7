"""The daemon's core executor, counting the calls it has queued for the core thread, so a test
that orders work on the core thread's queues waits until they are queued instead of sleeping."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from rota.scheduler.core_thread import CoreExecutor

T = TypeVar("T")
P = ParamSpec("P")


class CountedExecutor:
    """A ``CoreExecutor`` (the real core and policy threads) whose ``queued(n)`` waits until
    ``n`` requests and background calls in all have been queued for the core thread."""

    def __init__(self) -> None:
        self.inner = CoreExecutor()
        self.count = 0  # core-thread calls queued since start
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._counted(self.inner.call(fn, *args, **kwargs))

    async def background(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._counted(self.inner.background(fn, *args, **kwargs))

    async def policy(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.inner.policy(fn, *args, **kwargs)

    async def what_if(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.inner.what_if(fn, *args, **kwargs)

    def shutdown(self) -> None:
        self.inner.shutdown()

    async def queued(self, count: int, timeout: float = 10.0) -> None:
        """Wait until ``count`` core-thread calls have been queued since start."""
        if self.count >= count:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((count, waiter))
        async with asyncio.timeout(timeout):
            await waiter

    async def _counted(self, call: Coroutine[Any, Any, T]) -> T:
        # Waiters wake on a later turn of the event loop; by then awaiting ``call`` here, which
        # queues before it first suspends, has queued it.
        self.count += 1
        for entry in [w for w in self._waiters if w[0] <= self.count]:
            self._waiters.remove(entry)
            if not entry[1].done():
                entry[1].set_result(None)
        return await call
