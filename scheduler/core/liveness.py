"""When each agent stream was last heard from, stamped on receipt.

The one piece of scheduler state written outside the core thread: the event loop stamps a
node the moment any message of its stream arrives, before that message waits for the core
thread, and the core thread reads the stamps when it looks for lost nodes. Each stamp is one
dict assignment of an immutable pair, atomic under the GIL, so no lock is needed.
"""

from __future__ import annotations

from collections.abc import Callable


class Liveness:
    """Receipt stamps per node: ``(session, time)`` of the last message of that session."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._seen: dict[str, tuple[int, float]] = {}

    def stamp(self, node: str, session: int) -> float:
        """Record that ``session`` of ``node`` was heard from now (event loop); returns now."""
        now = self.clock()
        self._seen[node] = (session, now)
        return now

    def seen(self, node: str, session: int) -> float | None:
        """When ``session`` of ``node`` was last heard from, None if never (any thread)."""
        entry = self._seen.get(node)
        if entry is None or entry[0] != session:
            return None
        return entry[1]
