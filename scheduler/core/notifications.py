"""Job webhooks: which are due, what they say, and what happened to each try.

A job-end webhook is queued by the store in the transaction that ends its job
(``JobRepository.save``), an idle rule's (``idle_warning``, ``idle_end``: ``idle_event`` puts
its body on the event) in the transaction that records the warning or the stop, so both
survive a restart; a job's webhooks are posted one at a time, in the order they were queued. This service runs on the core thread like every other; the posting itself
happens off it (``rota.scheduler.notifier``). Each failure and the final give-up or delivery is
recorded as an event of the job, shown by ``gcontrol show job``; a failure says only "failed"
(why is in the scheduler's log), so a webhook is no probe of which hosts and ports answer.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass

from rota.jobends import end_event
from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.store.protocols import NoticeRepository


@dataclass(frozen=True, slots=True)
class Delivery:
    """One webhook to post: its job, address, JSON body and how many tries failed before;
    ``webhook_id`` and ``event`` name an idle rule's webhook (0 and "" the job-end one)."""

    job_id: int
    attempt: int
    state: str
    url: str
    body: bytes
    tries: int
    webhook_id: int = 0
    event: str = ""


@dataclass(frozen=True, slots=True)
class IdleNotice:
    """What an idle rule's webhook tells: ``event`` ``idle_warning`` or ``idle_end``;
    ``action`` what happens at ``at`` (``end``, ``cancel``, ``requeue``; "" none set);
    ``since`` when the idle stretch began; ``rule`` the setting that decided; ``message``
    the text of the job's event."""

    event: str
    action: str
    since: float
    at: float | None
    rule: str
    message: str


class NotificationService:
    """Hands out due webhooks and records their outcome, backing off exponentially."""

    def __init__(
        self, store: NoticeRepository, config: SchedulerConfig, clock: Callable[[], float]
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock

    def claim(self, limit: int) -> list[Delivery]:
        """Up to ``limit`` webhooks due now; each is not due again until it could have timed
        out twice (so one whose outcome a crash lost is posted again: at least once)."""
        lease = 2 * self.config.notify_timeout + 5.0
        notices = self.store.claim(self.clock(), lease, limit)
        return [
            Delivery(
                n.job.id,
                n.job.attempt,
                n.job.state.value,
                n.url,
                n.body.encode() if n.webhook_id else payload(n.job),
                n.tries,
                n.webhook_id,
                n.event,
            )
            for n in notices
        ]

    def delivered(self, delivery: Delivery, status: int) -> None:
        tries = delivery.tries + 1
        where = f"{_what(delivery)} delivered to {url_shown(delivery.url)}"
        text = f"{where} (HTTP {status}, try {tries})"
        event = self._event(delivery, HistoryKind.INFO, text)
        self.store.done(delivery.job_id, event, delivery.webhook_id)

    def failed(self, delivery: Delivery) -> None:
        """Retry after a backoff that doubles each time, or give up after ``notify_tries``."""
        tries = delivery.tries + 1
        limit = self.config.notify_tries
        where = f"{_what(delivery)} to {url_shown(delivery.url)}"
        if tries >= limit:
            text = f"{where} failed: given up after {tries} tries"
            event = self._event(delivery, HistoryKind.WARNING, text)
            self.store.done(delivery.job_id, event, delivery.webhook_id)
            return
        wait = min(self.config.notify_backoff * 2 ** (tries - 1), self.config.notify_max_backoff)
        text = f"{where} failed (try {tries} of {limit}); next in {wait:g}s"
        event = self._event(delivery, HistoryKind.WARNING, text)
        self.store.retry(delivery.job_id, tries, self.clock() + wait, event, delivery.webhook_id)

    def _event(self, delivery: Delivery, kind: HistoryKind, text: str) -> JobEvent:
        state = delivery.state
        return JobEvent(delivery.job_id, self.clock(), delivery.attempt, state, state, text, kind)


def payload(job: JobRecord) -> bytes:
    """The JSON a webhook posts (docs/metrics.md "Notifications")."""
    elapsed = (job.end_time or 0.0) - job.start_time if job.start_time else 0.0
    body = {
        "job_id": job.display_id,
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "state": job.state.value,
        "event": end_event(job.state),
        "exit_code": job.exit_code,
        "reason": job.reason,
        "attempt": job.attempt,
        "submit_time": job.submit_time,
        "start_time": job.start_time,
        "end_time": job.end_time,
        "elapsed": round(max(elapsed, 0.0), 3),
        "gpus": [
            {"node": a.node, "indices": list(a.gpus), "uuids": list(a.uuids)}
            for a in job.allocation
        ],
    }
    return json.dumps(body).encode()


def idle_event(event: JobEvent, job: JobRecord, notice: IdleNotice) -> JobEvent:
    """``event`` (of ``job``, as committed with it) carrying the body of the idle webhook
    ``notice`` tells of (docs/metrics.md "Idle webhooks")."""
    body = {
        "event": notice.event,
        "job_id": job.display_id,
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "interactive": job.spec.interactive,
        "attempt": event.attempt,
        "time": event.time,
        "idle_since": notice.since,
        "idle_for": round(max(event.time - notice.since, 0.0), 3),
        "action": notice.action or None,
        "at": notice.at,
        "rule": notice.rule,
        "message": notice.message,
        "nodes": [a.node for a in job.allocation],
        "gpus": [
            {"node": a.node, "indices": list(a.gpus), "uuids": list(a.uuids)}
            for a in job.allocation
        ],
    }
    return dataclasses.replace(event, webhook=json.dumps(body))


def _what(delivery: Delivery) -> str:
    return f"{delivery.event} notification" if delivery.event else "notification"


def url_shown(url: str) -> str:
    """The URL as events show it: scheme, host and port (paths may carry secrets)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0]}"
