"""The core thread: the one thread that touches the cluster model, with two queues.

Calls run one at a time. Requests (what users and admins asked for: a job's state, a listing,
a submission) go before background work (telemetry, job events, scheduling passes, ticks), so
a request waits for the call in progress, not for a backlog of background work; background
work keeps its order among itself. While background work waits, at most ``burst`` requests run
in a row before one background call: a flood of requests slows background work down, never
stops it.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, Protocol, TypeVar

T = TypeVar("T")
P = ParamSpec("P")

_Item = tuple["Future[Any]", Callable[[], Any]]


class CoreThread:
    """A single worker thread with a request queue and a background queue."""

    def __init__(self, name: str = "rota-core", burst: int = 4) -> None:
        self._burst = burst
        self._ready = threading.Condition()
        self._requests: deque[_Item] = deque()
        self._background: deque[_Item] = deque()
        self._in_a_row = 0  # requests run since background work last ran
        self._closed = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[], T], background: bool = False) -> Future[T]:
        """Queue ``fn``; its future holds the result or the exception. RuntimeError once
        ``shutdown`` was called."""
        future: Future[T] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the core thread is shut down")
            (self._background if background else self._requests).append((future, fn))
            self._ready.notify()
        return future

    def shutdown(self) -> None:
        """Run what is queued, then stop the thread and wait for it."""
        with self._ready:
            self._closed = True
            self._ready.notify()
        self._thread.join()

    def _next(self) -> _Item | None:
        with self._ready:
            while not self._requests and not self._background:
                if self._closed:
                    return None
                self._ready.wait()
            if self._requests and (not self._background or self._in_a_row < self._burst):
                self._in_a_row += 1
                return self._requests.popleft()
            self._in_a_row = 0
            return self._background.popleft()

    def _work(self) -> None:
        while (item := self._next()) is not None:
            future, fn = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn()
            except BaseException as exc:  # handed to the caller, as an executor would
                future.set_exception(exc)
            else:
                future.set_result(result)


class Executor(Protocol):
    """Where the engine's parts run service calls: typed, so an IDE and mypy follow ``fn`` and
    check its arguments. ``call``: a request (before queued background work); ``background``:
    telemetry, job events, passes, ticks, hellos (in order among themselves); ``policy``: a
    pure policy call (it reads only the snapshot it is given); ``what_if``: a dry run's
    policy call (``gsub --test-only``), on a thread of its own, so a flood of them delays
    neither the core thread nor the passes."""

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T: ...

    async def background(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T: ...

    async def policy(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T: ...

    async def what_if(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T: ...

    def shutdown(self) -> None: ...


class CoreExecutor:
    """The daemon's executor: the core thread (two queues), one policy thread and one for
    dry runs."""

    def __init__(self) -> None:
        self._core = CoreThread()
        self._policy = ThreadPoolExecutor(1, thread_name_prefix="rota-policy")
        self._what_if = ThreadPoolExecutor(1, thread_name_prefix="rota-what-if")

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        future = self._core.submit(functools.partial(fn, *args, **kwargs))
        return await asyncio.wrap_future(future)

    async def background(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        future = self._core.submit(functools.partial(fn, *args, **kwargs), background=True)
        return await asyncio.wrap_future(future)

    async def policy(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._policy, functools.partial(fn, *args, **kwargs))

    async def what_if(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._what_if, functools.partial(fn, *args, **kwargs))

    def shutdown(self) -> None:
        """Run what is queued, then stop the threads."""
        self._core.shutdown()
        self._policy.shutdown(wait=True)
        self._what_if.shutdown(wait=True)


class InlineExecutor:
    """A synchronous executor for in-process tests: every call runs at once on the event loop
    thread (so it is the only thread touching the model), in the order it was made."""

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return fn(*args, **kwargs)

    async def background(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return fn(*args, **kwargs)

    async def policy(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return fn(*args, **kwargs)

    async def what_if(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return fn(*args, **kwargs)

    def shutdown(self) -> None:
        """Nothing to stop."""
