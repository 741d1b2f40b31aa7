"""The sending worker of job mail: an asyncio task beside the engine, shaped as the webhook
``Notifier``. It asks the engine for due mails (a short core-thread step), sends each through
the admin's SMTP relay (``mail_relay``) on a thread pool of its own with a timeout, and reports
the outcome back, so a slow relay never holds up scheduling."""

from __future__ import annotations

import asyncio
import logging
import smtplib
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from rota.scheduler.core.mail import Mail

log = logging.getLogger("rota.scheduler")
Claim = Callable[[int], Awaitable[list[Mail]]]
Report = Callable[[Mail, str], Awaitable[None]]  # (mail, error; "" when sent)


class SmtpSender:
    """Sends messages through one relay (``host:port``, plain SMTP) on ``workers`` threads of
    its own; each connection gets ``timeout`` seconds per network operation."""

    def __init__(self, relay: str, timeout: float, workers: int) -> None:
        host, _, port = relay.rpartition(":")
        self.host, self.port = host.strip("[]"), int(port)
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="rota-mail")

    async def send(self, mail: Mail) -> str:
        """ "" once the relay took the message, else why not."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._send, mail)

    def _send(self, mail: Mail) -> str:
        try:
            with smtplib.SMTP(self.host, self.port, timeout=self.timeout) as smtp:
                smtp.send_message(mail.message)
        except (OSError, smtplib.SMTPException) as exc:
            return str(exc) or type(exc).__name__
        return ""

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Mailer:
    """Sends due mails, at most ``concurrency`` at a time, looking for new ones every
    ``poll`` seconds."""

    def __init__(
        self, claim: Claim, report: Report, sender: SmtpSender, concurrency: int, poll: float
    ) -> None:
        self._claim = claim
        self._report = report
        self._sender = sender
        self._slots = concurrency
        self._poll = poll
        self._busy: set[asyncio.Task[None]] = set()
        self._flying: set[tuple[int, int, str] | int] = set()  # mails being sent
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="rota-mailer")

    async def stop(self) -> None:
        """Stop looking and abandon sends in flight (their leases run out and they are sent
        again, by this scheduler or the next)."""
        tasks = [t for t in [self._task, *self._busy] if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._sender.close()

    async def _run(self) -> None:
        while True:
            free = self._slots - len(self._busy)
            claimed: list[Mail] = []
            if free > 0:
                try:
                    claimed = await self._claim(free)
                except Exception:
                    log.exception("could not read the mails due; trying again")
            for mail in claimed:
                if mail.key in self._flying:
                    continue
                self._flying.add(mail.key)
                task = asyncio.create_task(self._deliver(mail))
                self._busy.add(task)
                task.add_done_callback(self._busy.discard)
            if len(claimed) < free or free <= 0:
                await asyncio.sleep(self._poll)

    async def _deliver(self, mail: Mail) -> None:
        try:
            error = await self._sender.send(mail)
            if error:
                job = {} if isinstance(mail.key, int) else {"job": mail.key[0]}
                log.warning(
                    "%s: mail %s to %s failed: %s",
                    mail.about,
                    mail.message["Subject"],
                    mail.to,
                    error,
                    extra=job,
                )
            await self._report(mail, error)
        except Exception:
            log.exception("could not record the mail of %s", mail.about)
        finally:
            self._flying.discard(mail.key)
