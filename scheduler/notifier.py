"""The delivery worker of job webhooks (ends, idle rules'): an asyncio task beside the engine.

It asks the engine for due webhooks (a short core-thread step), posts each on a thread pool of
its own with a timeout, and reports the outcome back (another short core-thread step), so a slow
or silent receiver never holds up scheduling. Redirects are not followed; any answer but 2xx is
a failure, retried with backoff by ``NotificationService``. Why a try failed goes to this log
only: the job's events say "failed", so a webhook cannot tell its owner which ports answer.
"""

from __future__ import annotations

import asyncio
import http.client
import logging
import socket
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from rota.destinations import Network, address_refusal
from rota.scheduler.core.notifications import Delivery, url_shown

log = logging.getLogger("rota.scheduler")
Claim = Callable[[int], Awaitable[list[Delivery]]]
Report = Callable[[Delivery, int, str], Awaitable[None]]  # (delivery, HTTP status or 0, error)


class HttpPoster:
    """Posts JSON bodies on ``workers`` threads of its own; each post gets ``timeout`` seconds
    per network operation. The host is resolved once and every address it has is checked
    (``rota.destinations``: public, or in ``allowed``); the post then goes to the address
    checked, so a name that resolves differently a moment later (DNS rebinding) changes
    nothing. Redirects are not followed, nor proxies from the environment."""

    def __init__(self, timeout: float, workers: int, allowed: Sequence[Network] = ()) -> None:
        self.timeout = timeout
        self.allowed = tuple(allowed)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="rota-notify")

    async def post(self, url: str, body: bytes) -> tuple[int, str]:
        """(HTTP status, "") on a 2xx answer, else (status or 0, why)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._post, url, body)

    def _post(self, url: str, body: bytes) -> tuple[int, str]:
        try:
            parts = urlsplit(url)
            secure = parts.scheme == "https"
            host, port = parts.hostname or "", parts.port or (443 if secure else 80)
            address = self._checked_address(host, port)
            kind = http.client.HTTPSConnection if secure else http.client.HTTPConnection
            connection = kind(host, port, timeout=self.timeout)
        except (OSError, ValueError) as exc:
            return 0, str(exc) or type(exc).__name__
        # the connection dials the checked address; TLS still verifies the certificate of
        # the host name, which the Host header carries too
        connection._create_connection = lambda _where, *args: socket.create_connection(  # type: ignore[attr-defined]
            (address, port), *args
        )
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        headers = {"Content-Type": "application/json", "User-Agent": "rota-scheduler"}
        try:
            connection.request("POST", target, body, headers)
            answer = connection.getresponse()
            answer.read(4096)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            return 0, str(exc) or type(exc).__name__
        finally:
            connection.close()
        if 200 <= answer.status < 300:
            return answer.status, ""
        return answer.status, f"HTTP {answer.status} {answer.reason}"

    def _checked_address(self, host: str, port: int) -> str:
        """The first address of ``host``, once all of them are allowed (OSError naming the
        refused one otherwise)."""
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
        for address in addresses:
            refused = address_refusal(address, self.allowed)
            if refused:
                raise OSError(f"refused {host}: {refused}")
        if not addresses:
            raise OSError(f"{host} has no address")
        return addresses[0]

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

    async def idle(self) -> None:
        """Return once every post claimed so far has ended and its outcome is recorded."""
        while self._busy:
            await asyncio.gather(*self._busy, return_exceptions=True)

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
                    "job %d: webhook to %s failed: %s",
                    delivery.job_id,
                    url_shown(delivery.url),
                    error,
                    extra={"job": delivery.job_id},
                )
            await self._report(delivery, status, error)
        except Exception:
            log.exception("could not record the webhook of job %d", delivery.job_id)
        finally:
            self._flying.discard(delivery.job_id)
