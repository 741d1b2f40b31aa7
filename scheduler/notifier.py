"""The delivery worker of job-end webhooks: an asyncio task beside the engine.

It asks the engine for due webhooks (a short core-thread step), posts each on a thread pool of
its own with a timeout, and reports the outcome back (another short core-thread step), so a slow
or silent receiver never holds up scheduling. Redirects are not followed; any answer but 2xx is
a failure, retried with backoff by ``NotificationService``.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rota.scheduler.core.notifications import Delivery

log = logging.getLogger("rota.scheduler")
Claim = Callable[[int], Awaitable[list[Delivery]]]
Report = Callable[[Delivery, int, str], Awaitable[None]]  # (delivery, HTTP status or 0, error)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx answer becomes an HTTPError: a failed try


class HttpPoster:
    """Posts JSON bodies on ``workers`` threads of its own; each post gets ``timeout`` seconds
    per network operation."""

    def __init__(self, timeout: float, workers: int) -> None:
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="rota-notify")
        self._opener = urllib.request.build_opener(_NoRedirects())

    async def post(self, url: str, body: bytes) -> tuple[int, str]:
        """(HTTP status, "") on a 2xx answer, else (status or 0, why)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._post, url, body)

    def _post(self, url: str, body: bytes) -> tuple[int, str]:
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "rota-scheduler"},
        )
        try:
            with self._opener.open(request, timeout=self.timeout) as answer:
                answer.read(4096)
                return answer.status, ""
        except urllib.error.HTTPError as exc:
            return exc.code, f"HTTP {exc.code} {exc.reason}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            why = getattr(exc, "reason", exc)
            return 0, str(why) or type(why).__name__

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Notifier:
    """Posts due webhooks, at most ``concurrency`` at a time, looking for new ones every
    ``poll`` seconds."""

    def __init__(
        self, claim: Claim, report: Report, poster: HttpPoster, concurrency: int, poll: float
    ) -> None:
        self._claim = claim
        self._report = report
        self._poster = poster
        self._slots = concurrency
        self._poll = poll
        self._busy: set[asyncio.Task[None]] = set()
        self._flying: set[int] = set()  # job ids being posted (a lease may run out meanwhile)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="rota-notifier")

    async def stop(self) -> None:
        """Stop looking and abandon posts in flight (their leases run out and they are posted
        again, by this scheduler or the next)."""
        for task in [self._task, *self._busy]:
            if task is not None:
                task.cancel()
        await asyncio.gather(*[t for t in [self._task, *self._busy] if t], return_exceptions=True)
        self._poster.close()

    async def _run(self) -> None:
        while True:
            free = self._slots - len(self._busy)
            claimed: list[Delivery] = []
            if free > 0:
                try:
                    claimed = await self._claim(free)
                except Exception:
                    log.exception("could not read the webhooks due; trying again")
            for delivery in claimed:
                if delivery.job_id in self._flying:
                    continue
                self._flying.add(delivery.job_id)
                task = asyncio.create_task(self._deliver(delivery))
                self._busy.add(task)
                task.add_done_callback(self._busy.discard)
            if len(claimed) < free or free <= 0:
                await asyncio.sleep(self._poll)

    async def _deliver(self, delivery: Delivery) -> None:
        try:
            status, error = await self._poster.post(delivery.url, delivery.body)
            if error:
                log.warning(
                    "job %d: webhook failed: %s",
                    delivery.job_id,
                    error,
                    extra={"job": delivery.job_id},
                )
            await self._report(delivery, status, error)
        except Exception:
            log.exception("could not record the webhook of job %d", delivery.job_id)
        finally:
            self._flying.discard(delivery.job_id)
