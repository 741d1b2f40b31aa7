"""The reservation clock: APScheduler date jobs at every window start and end.

At each edge the engine runs a pass, so a window opens and closes on time rather than at the
next periodic tick; the pass sees the pure reservation calendar at that instant, and the
writing (recurring windows moved on, ended ones forgotten, PURGE_COMP ones deleted) is left to
the periodic tick's ``advance``. The jobs are rebuilt from the service's edges (as of the
clock), at start-up, after every edge and after every change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from apscheduler.schedulers.asyncio import AsyncIOScheduler

_PREFIX = "reservation-edge-"


class ReservationClock:
    """Keeps one date job per future edge on ``scheduler``. ``start`` gives it the engine's
    ``reservation_edges`` (a pass now, then the future edges)."""

    def __init__(self, scheduler: AsyncIOScheduler) -> None:
        self.scheduler = scheduler
        self._edges: Callable[[], Awaitable[list[float]]] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, edges: Callable[[], Awaitable[list[float]]]) -> None:
        """Schedule the edges the service knows now (rebuilt from the database)."""
        self._edges = edges
        await self.fire()

    def changed(self) -> None:
        """A reservation changed: schedule again (from any coroutine on the loop)."""
        if self._edges is None:
            return
        task = asyncio.get_running_loop().create_task(self.fire())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def fire(self) -> None:
        """Ask for a pass and replace the date jobs with the edges it returns."""
        assert self._edges is not None, "start() first"
        self.schedule(await self._edges())

    def schedule(self, edges: list[float]) -> None:
        for job in self.scheduler.get_jobs():
            if job.id.startswith(_PREFIX):
                job.remove()
        for t in edges:
            self.scheduler.add_job(
                self.fire,
                "date",
                run_date=datetime.fromtimestamp(t, UTC),
                id=f"{_PREFIX}{t:.3f}",
                misfire_grace_time=None,
                coalesce=True,
            )

    def pending(self) -> list[float]:
        """The edges scheduled now, earliest first."""
        return sorted(
            job.next_run_time.timestamp()
            for job in self.scheduler.get_jobs()
            if job.id.startswith(_PREFIX) and job.next_run_time is not None
        )
