"""Job-end webhooks: which are due, what they say, and what happened to each try.

A webhook is queued by the store in the transaction that ends its job (``JobRepository.save``), so it
survives a restart. This service runs on the core thread like every other; the posting itself
happens off it (``rota.scheduler.notifier``). Each failure and the final give-up or delivery is
recorded as an event of the job, shown by ``gcontrol show job``; a failure says only "failed"
(why is in the scheduler's log), so a webhook is no probe of which hosts and ports answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from rota.jobends import end_event
from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.store.protocols import NoticeRepository


@dataclass(frozen=True, slots=True)
class Delivery:
    """One webhook to post: its job, address, JSON body and how many tries failed before."""

    job_id: int
    attempt: int
    state: str
    url: str
    body: bytes
    tries: int


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
            Delivery(n.job.id, n.job.attempt, n.job.state.value, n.url, payload(n.job), n.tries)
            for n in notices
        ]

    def delivered(self, delivery: Delivery, status: int) -> None:
        tries = delivery.tries + 1
        text = f"notification delivered to {url_shown(delivery.url)} (HTTP {status}, try {tries})"
        self.store.done(delivery.job_id, self._event(delivery, HistoryKind.INFO, text))

    def failed(self, delivery: Delivery) -> None:
        """Retry after a backoff that doubles each time, or give up after ``notify_tries``."""
        tries = delivery.tries + 1
        limit = self.config.notify_tries
        where = url_shown(delivery.url)
        if tries >= limit:
            text = f"notification to {where} failed: given up after {tries} tries"
            self.store.done(delivery.job_id, self._event(delivery, HistoryKind.WARNING, text))
            return
        wait = min(self.config.notify_backoff * 2 ** (tries - 1), self.config.notify_max_backoff)
        text = f"notification to {where} failed (try {tries} of {limit}); next in {wait:g}s"
        event = self._event(delivery, HistoryKind.WARNING, text)
        self.store.retry(delivery.job_id, tries, self.clock() + wait, event)

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


def url_shown(url: str) -> str:
    """The URL as events show it: scheme, host and port (paths may carry secrets)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0]}"
