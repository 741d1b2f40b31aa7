"""Job mail (sbatch ``--mail-type``) and mail to the owners of a reservation given back
(``UnusedNotice``): which mails are due, what they say, what became of each.

A mail is queued by the store in the transaction that records the change it tells of (when the
admin set ``mail_relay``), so it survives a restart; this service runs on the core thread, the
sending happens off it (``rota.scheduler.mailer``). Each send, failure and give-up of a job's
mail is an event of the job (``gcontrol show job``), of a reservation's a line of the
scheduler's log; why a try failed goes to the scheduler's log only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from typing import TYPE_CHECKING

from rota.jobmail import IDLE
from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.store.protocols import (
    BookingMail,
    BookingMailRepository,
    MailKey,
    MailRepository,
)
from rota.units import format_duration

log = logging.getLogger("rota.scheduler")
if TYPE_CHECKING:
    from rota.scheduler.core.submission import SubmitItem, SubmitResult

_VERBS = {"BEGIN": "Began", "END": "Ended", "FAIL": "Failed", IDLE: "Idle"}


@dataclass(frozen=True, slots=True)
class Mail:
    """One mail to send: its key (a reservation mail's: its stored id), recipient, message and
    how many tries failed before; ``about``: what it tells of, for the log."""

    key: MailKey | int
    state: str
    to: str
    message: EmailMessage
    tries: int
    about: str


class MailService:
    """Hands out due mails and records their outcome, backing off as webhooks do
    (``notify_tries``, ``notify_backoff``, ``notify_max_backoff``)."""

    def __init__(
        self,
        store: MailRepository,
        bookings: BookingMailRepository,
        config: SchedulerConfig,
        clock: Callable[[], float],
    ) -> None:
        self.store = store
        self.bookings = bookings
        self.config = config
        self.clock = clock

    def address(self, name: str) -> str:
        """``name`` as a mail address: a bare name gets ``@mail_domain`` when one is set."""
        domain = self.config.mail_domain
        return f"{name}@{domain}" if domain and "@" not in name else name

    def claim(self, limit: int) -> list[Mail]:
        """Up to ``limit`` mails due now, jobs' first; each is not due again until it could
        have timed out twice (one whose outcome a crash lost is sent again: at least once)."""
        lease = 2 * self.config.notify_timeout + 5.0
        out = []
        for stored in self.store.claim(self.clock(), lease, limit):
            to = self.address(stored.to or stored.job.user)
            try:
                message = compose(stored.job, stored.kind, self.clock())
                message["From"] = self.address(self.config.mail_from)
                message["To"] = to
            except ValueError:  # a header with a line break: never sent, never the others' stop
                log.warning(
                    "job %d: its %s mail has a line break in a header", stored.job.id, stored.kind
                )
                continue
            about = f"job {stored.job.id}"
            state = stored.job.state.value
            out.append(Mail(stored.key, state, to, message, stored.tries, about))
        if len(out) < limit:
            out += map(self._booking, self.bookings.claim(self.clock(), lease, limit - len(out)))
        return out

    def _booking(self, stored: BookingMail) -> Mail:
        message = EmailMessage()
        message["Subject"] = stored.subject
        message["From"] = self.address(self.config.mail_from)
        message["To"] = stored.to
        message.set_content(stored.body)
        about = f"reservation {stored.reservation}"
        return Mail(stored.id, "", stored.to, message, stored.tries, about)

    def sent(self, mail: Mail) -> None:
        if isinstance(mail.key, int):
            log.info("%s: mail sent to %s (try %d)", mail.about, mail.to, mail.tries + 1)
            self.bookings.done(mail.key)
            return
        text = f"mail {mail.key[2]} sent to {mail.to} (try {mail.tries + 1})"
        self.store.done(mail.key, self._event(mail.key, mail, HistoryKind.INFO, text))

    def failed(self, mail: Mail) -> None:
        """Retry after a backoff that doubles each time, or give up after ``notify_tries``."""
        tries = mail.tries + 1
        limit = self.config.notify_tries
        wait = min(self.config.notify_backoff * 2 ** (tries - 1), self.config.notify_max_backoff)
        if isinstance(mail.key, int):
            if tries >= limit:
                log.warning("%s: mail to %s given up after %d tries", mail.about, mail.to, tries)
                self.bookings.done(mail.key)
            else:
                self.bookings.retry(mail.key, tries, self.clock() + wait)
            return
        if tries >= limit:
            text = f"mail {mail.key[2]} to {mail.to} failed: given up after {tries} tries"
            self.store.done(mail.key, self._event(mail.key, mail, HistoryKind.WARNING, text))
            return
        text = f"mail {mail.key[2]} to {mail.to} failed (try {tries} of {limit}); next in {wait:g}s"
        event = self._event(mail.key, mail, HistoryKind.WARNING, text)
        self.store.retry(mail.key, tries, self.clock() + wait, event)

    def _event(self, key: MailKey, mail: Mail, kind: HistoryKind, text: str) -> JobEvent:
        job_id, attempt, _ = key
        return JobEvent(job_id, self.clock(), attempt, mail.state, mail.state, text, kind)


def submission_warnings(
    results: Sequence[SubmitResult], items: Sequence[SubmitItem], relay: str | None
) -> list[list[str]]:
    """Each submission result's warnings, from the item it answers (by request id, else by
    place); every door that submits (gRPC, the commands' HTTP route) says the same."""
    by_id = {i.client_request_id: i for i in items if i.client_request_id}
    same = len(results) == len(items)
    out = []
    for n, result in enumerate(results):
        item = by_id.get(result.client_request_id) or (items[n] if same else None)
        out.append(mail_warnings(item.spec.mail_type, relay) if item is not None else [])
    return out


def mail_warnings(types: Sequence[str], relay: str | None) -> list[str]:
    """What a submission asking for mail of ``types`` is told when no relay is set."""
    if relay is not None or not set(types) - {"NONE"}:
        return []
    return ["mail_type: accepted, but no mail is sent: the scheduler has no mail_relay setting"]


def compose(job: JobRecord, kind: str, now: float) -> EmailMessage:
    """The mail of ``kind`` about ``job``, its subject as SLURM's: ``rota Job_id=12
    Name=train Began, Queued time 0:05`` or ``... Ended, Run time 1:02:03, COMPLETED,
    ExitCode 0``."""
    head = f"rota Job_id={job.display_id} Name={job.name} {_VERBS[kind]}"
    if kind == "BEGIN":
        queued = (job.start_time or now) - job.submit_time
        subject = f"{head}, Queued time {format_duration(max(queued, 0.0))}"
    elif kind == IDLE:
        subject = f"{head}, its GPUs at 0% utilisation: it ends if it stays idle"
    else:
        ran = (job.end_time or now) - job.start_time if job.start_time else 0.0
        code = "" if job.exit_code is None else f", ExitCode {job.exit_code}"
        subject = f"{head}, Run time {format_duration(max(ran, 0.0))}, {job.state.value}{code}"
    message = EmailMessage()
    message["Subject"] = subject
    lines = [
        subject,
        "",
        f"user: {job.user}  account: {job.account}  attempt: {job.attempt}",
        f"nodes: {','.join(job.node_names) or '-'}",
    ]
    if job.reason:
        lines.append(f"reason: {job.reason}")
    message.set_content("\n".join(lines) + "\n")
    return message
