"""A background writer: writes that may land later run in order on one thread of their own."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


class BackgroundWriter:
    """Runs submitted writes one at a time, in submission order, off the caller's thread.
    A write that raises is lost (its caller must be able to rebuild it)."""

    def __init__(self, name: str) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)

    def submit(self, write: Callable[..., Any], *args: Any) -> None:
        self._pool.submit(write, *args)

    def close(self) -> None:
        """Finish the writes under way and queued, then stop the thread."""
        self._pool.shutdown(wait=True)
