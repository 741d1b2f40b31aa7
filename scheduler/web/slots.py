"""The long-lived connections (the job page's terminal, a request to a job's web port) one
user holds at once on one HTTP port: at most ``per_user``, so that no user takes every
connection the port lends to them (``HttpServer``: half of its connections) and stalls
everyone else's terminals and ports (``PER_USER_SHARE``: one user gets at most an eighth of
the port's connections)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TypeVar

from rota.scheduler.web.api import ApiError

PER_USER_SHARE = 8  # one user holds at most max_connections // PER_USER_SHARE at once
T = TypeVar("T")


def per_user(max_connections: int) -> int:
    """How many long-lived connections one user may hold on a port of ``max_connections``."""
    return max(1, max_connections // PER_USER_SHARE)


class UserSlots:
    """Counts each user's open sessions (event loop only)."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._open: dict[str, int] = {}

    async def held(self, user: str, events: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        """``events`` as one of ``user``'s sessions, until it ends or is closed. Refused
        (ApiError 503, ``events`` closed unopened) when ``user`` holds ``most`` already."""
        if self._open.get(user, 0) >= self.most:
            await events.aclose()
            raise ApiError(
                503,
                f"{user} has {self.most} terminals or requests to jobs' ports open on this "
                "port, the most one user may hold at once: close some and try again",
            )
        self._open[user] = self._open.get(user, 0) + 1
        try:
            async for event in events:
                yield event
        finally:
            left = self._open.pop(user) - 1
            if left:
                self._open[user] = left
            await events.aclose()
