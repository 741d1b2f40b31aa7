"""The long-lived connections (the job page's terminal, a raw forward, a request to a job's web
port) one user holds at once on one HTTP port: at most ``per_user``, so that no user takes every
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
        try:
            self.take(user)
        except ApiError:
            await events.aclose()
            raise
        try:
            async for event in events:
                yield event
        finally:
            self.give(user)
            await events.aclose()

    def check(self, user: str) -> None:
        """ApiError 503 when ``user`` holds ``most`` sessions already."""
        if self._open.get(user, 0) >= self.most:
            raise ApiError(
                503,
                f"{user} has {self.most} terminals, forwards or requests to jobs' ports open on "
                "this port, the most one user may hold at once: close some and try again",
            )

    def take(self, user: str) -> None:
        """Count one more session of ``user`` (``check`` first); ``give`` it back at its end."""
        self.check(user)
        self._open[user] = self._open.get(user, 0) + 1

    def give(self, user: str) -> None:
        """One of ``user``'s sessions ended."""
        left = self._open.pop(user, 1) - 1
        if left:
            self._open[user] = left
