"""The pass loop: wanting, running and applying scheduling passes.

A pass is a snapshot (core thread, background), a decision (policy thread) and an apply (core
thread, at most ``PLACEMENTS_PER_HOP`` placements per hop, the plan's remainder last, each
checked against the model as it is then), and its orders sent. Requests for a pass made while one runs
coalesce into one more. The loop lives on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from rota.messages import LaunchOrder
from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.planning import Planner
from rota.scheduler.core_thread import Executor
from rota.scheduler.policy.base import Policy
from rota.scheduler.policy.snapshot import Placement, Plan

log = logging.getLogger("rota.scheduler")
PLACEMENTS_PER_HOP = 50  # placements of a plan committed per core-thread hop


class PassObserver(Protocol):
    """Told about every scheduling pass (the metrics): how long it took and, for each job it
    launched, how long that job waited since submission."""

    def pass_done(self, seconds: float, queue_waits: Sequence[float]) -> None: ...


class PassLoop:
    """Runs a pass whenever one is wanted (``want``), until ``stop``."""

    def __init__(
        self,
        executor: Executor,
        model: ClusterModel,
        planner: Planner,
        policy: Policy,
        dispatch: Callable[[Orders], None],
        observer: PassObserver | None = None,
    ) -> None:
        self.executor = executor
        self.model = model
        self.planner = planner
        self.policy = policy
        self.dispatch = dispatch
        self.observer = observer
        self.started = 0  # passes begun since start
        self.passes = 0  # passes finished (or failed) since start
        self._wanted = asyncio.Event()
        self._finished = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="rota-pass-loop")
        self.want()

    def want(self) -> None:
        """Ask for a pass; requests made during a pass coalesce into one more."""
        self._wanted.set()

    async def passes_done(self, count: int) -> int:
        """Wait until ``count`` passes have finished since start; the number finished."""
        async with self._finished:
            await self._finished.wait_for(lambda: self.passes >= count)
            return self.passes

    async def fresh_pass(self) -> int:
        """Ask for a pass and wait until one that began after this call has finished (it saw
        every change made before the call); the number of passes finished."""
        target = self.started + 1
        self.want()
        return await self.passes_done(target)

    async def stop(self) -> None:
        """Finish the pass in progress, then stop."""
        self._stopping = True
        self._wanted.set()
        if self._task is not None:
            await self._task

    async def _loop(self) -> None:
        while not self._stopping:
            await self._wanted.wait()
            if self._stopping:
                return
            self._wanted.clear()
            try:
                await self.run()
            except Exception:
                log.exception("scheduling pass failed; retrying on the next trigger")

    async def run(self) -> None:
        """One pass: snapshot, decide, apply (see module doc), send orders."""
        self.started += 1
        try:
            await self._run()
        finally:
            async with self._finished:
                self.passes += 1
                self._finished.notify_all()

    async def _run(self) -> None:
        began = time.monotonic()
        planner, core = self.planner, self.executor
        snapshot = await core.background(planner.snapshot)
        plan = await core.policy(self.policy.decide, snapshot)
        waits: list[float] = []
        rest = plan.placements
        while len(rest) > PLACEMENTS_PER_HOP:
            part, rest = rest[:PLACEMENTS_PER_HOP], rest[PLACEMENTS_PER_HOP:]
            orders, waited = await core.background(self._place, part)
            waits += waited
            self.dispatch(orders)
        orders, waited = await core.background(self._apply, replace(plan, placements=rest))
        waits += waited
        self.dispatch(orders)
        if self.observer is not None:
            self.observer.pass_done(time.monotonic() - began, waits)

    def _place(self, placements: Sequence[Placement]) -> tuple[Orders, list[float]]:
        return self._waits(self.planner.place(placements))

    def _apply(self, plan: Plan) -> tuple[Orders, list[float]]:
        return self._waits(self.planner.apply(plan))

    def _waits(self, orders: Orders) -> tuple[Orders, list[float]]:
        """(core thread) ``orders`` and, for each job they launch, how long it waited since
        submission."""
        jobs, now = self.model.jobs, time.time()
        launched = {o.job_id for _, o in orders if isinstance(o, LaunchOrder)}
        return orders, [now - jobs[i].submit_time for i in launched if i in jobs]
