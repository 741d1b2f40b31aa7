"""Large submissions and cancels (big arrays) without holding the core thread.

A submission of more than ``LARGE_SUBMISSION`` jobs is run in steps so that heartbeats, pongs
and small RPCs keep being answered meanwhile (no core step costs more than a few tens of ms):

1. ``JobService.admit`` on the core thread: the checks, per item (not per task);
2. on this module's own thread: expanding the items into task records, then the bulk insert
   (``JobRepository.submit``: the array's spec once, one multi-row INSERT of minimal task rows, one
   event) in one transaction, so a kill -9 leaves all of the submission or none of it;
3. ``JobService.adopt`` on the core thread, ``ADOPT_CHUNK`` records per step, each step also building
   their snapshot views, so the next pass has nothing per task left to do; after each step the
   objects made so far are frozen out of the cyclic garbage collector (``gc.freeze``).

The client is answered after step 3, so its first ``gqueue`` lists every task. Until then the
tasks are committed but not yet scheduled; nobody knows their ids but the database.

A cancel naming more than ``CANCEL_CHUNK`` live jobs runs as ``JobService.cancel_targets``
(which live jobs each id names), then ``JobService.cancel_live`` of ``CANCEL_CHUNK`` jobs per
core step, each step committing and its kill orders sent before the next. Every job is
cancelled on its own, so a crash between steps leaves some cancelled and the rest untouched,
as if the cancel had been cut short; the client hears once every step is done.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.jobs import JobService
from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core.lookup import CancelResult
from rota.scheduler.core.submission import SubmitItem, SubmitResult
from rota.scheduler.store.protocols import DuplicateRequest

T = TypeVar("T")
CoreCall = Callable[..., Awaitable[Any]]

LARGE_SUBMISSION = 1_000  # jobs; smaller submissions are one core step (JobService.submit)
ADOPT_CHUNK = 500  # records taken into the cluster model per core step
CANCEL_CHUNK = 500  # jobs cancelled per core step (about 20 ms of CPU)


class LargeSubmissions:
    """Runs large submissions; ``call`` runs a function on the core thread (the engine's)."""

    def __init__(self, jobs: JobService, call: CoreCall) -> None:
        self.jobs = jobs
        self.call = call
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="rota-bulk")

    async def _off_core(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def submit(self, items: Sequence[SubmitItem], user: str) -> list[SubmitResult]:
        """Store ``items`` (all or none) and answer as ``JobService.submit`` does."""
        service = self.jobs
        admission = await self.call(service.admit, items, user)
        groups = await self._off_core(admission.expand)
        try:
            stored = await self._off_core(service.store.submit, groups, admission.request_ids, user)
        except DuplicateRequest:  # another writer stored one of these ids: answer from its rows
            return list(await self.call(service.submit, items, user, False))
        jobs = [job for group in stored for job in group]
        for start in range(0, len(jobs), ADOPT_CHUNK):
            await self.call(service.adopt, jobs[start : start + ADOPT_CHUNK], True)
            # The adopted records live as long as their jobs: exempt them (and all older
            # objects) from the cyclic garbage collector, whose full collections otherwise
            # scan every record again and hold every thread for hundreds of ms.
            gc.freeze()
        return list(admission.results(stored))

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)


class LargeCancels:
    """Runs cancels in chunks; ``call`` runs a function on the core thread, ``dispatch``
    sends orders to agents (both the engine's)."""

    def __init__(self, jobs: JobService, call: CoreCall, dispatch: Callable[[Orders], None]):
        self.jobs = jobs
        self.call = call
        self.dispatch = dispatch

    async def cancel(
        self, display_ids: Sequence[str], who: Principal, reason: str
    ) -> list[CancelResult]:
        """Answer as ``JobService.cancel`` does; small cancels are one core step. Every step
        checks again that ``who`` may cancel each job it stops (ids may name new jobs by then)."""
        service = self.jobs
        user = who.user
        targets = await self.call(service.cancel_targets, display_ids)
        if sum(map(len, targets.values())) <= CANCEL_CHUNK:
            results, orders = await self.call(service.cancel, display_ids, user, reason, who)
            self.dispatch(orders)
            return list(results)
        named = [i for i in display_ids if targets[i]]
        answers: dict[str, CancelResult] = {}
        rest = [i for i in display_ids if not targets[i]]
        if rest:  # ids naming no live job: the one-step cancel says why
            results, orders = await self.call(service.cancel, rest, user, reason, who)
            self.dispatch(orders)
            answers.update((r.id, r) for r in results)
        problems: dict[int, str] = {}
        ids = [job_id for i in named for job_id in targets[i]]
        for start in range(0, len(ids), CANCEL_CHUNK):
            chunk = ids[start : start + CANCEL_CHUNK]
            found, orders = await self.call(service.cancel_live, chunk, user, reason, who)
            self.dispatch(orders)
            problems.update(found)
        for i in named:
            why = [problems[job_id] for job_id in targets[i] if job_id in problems]
            answers[i] = CancelResult(i, not why, "; ".join(why))
        return [answers[i] for i in display_ids]
