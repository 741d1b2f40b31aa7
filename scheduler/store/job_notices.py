"""What a job's state changes queue for sending, in the transaction that stores them: the
webhooks of ended jobs (``notices``), of events that carry one (``job_webhooks``: idle warnings
and ends) and the mails jobs ask for (``mails``); the senders take them from there."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert, select, tuple_
from sqlalchemy.engine import Connection

from rota.jobends import idle_notice_wanted
from rota.jobmail import idle_mail
from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord
from rota.scheduler.store.array_mail import mail_of
from rota.scheduler.store.models import MAILS, NOTICES


def queue_notices(conn: Connection, notices: list[dict[str, Any]]) -> None:
    """Queue webhooks of jobs that ended; one already queued for a job stays as it is."""
    n = NOTICES.c
    queued = set(
        conn.execute(select(n.job_id).where(n.job_id.in_([x["job_id"] for x in notices]))).scalars()
    )
    fresh = [x for x in notices if x["job_id"] not in queued]
    if fresh:
        conn.execute(insert(NOTICES), fresh)


def event_webhooks(jobs: Sequence[JobRecord], events: Sequence[JobEvent]) -> list[dict[str, Any]]:
    """The ``job_webhooks`` rows of events that carry a webhook their job's ``notify`` wants."""
    by_id = {j.id: j for j in jobs if j.spec.notify_url}
    out = []
    for ev in events:
        job = by_id.get(ev.job_id)
        if not ev.webhook or job is None:
            continue
        if idle_notice_wanted(job.spec.notify_url, job.spec.notify_on):
            event = str(json.loads(ev.webhook).get("event", ""))
            out.append(
                {
                    "job_id": job.id,
                    "event": event[:32],
                    "url": job.spec.notify_url,
                    "body": ev.webhook,
                    "tries": 0,
                    "next_at": ev.time,
                }
            )
    return out


def mails_of(jobs: Sequence[JobRecord], events: Sequence[JobEvent]) -> list[dict[str, Any]]:
    """The mails the state changes of ``events`` call for (``rota.jobmail``; array tasks'
    candidates, which ``whole_arrays`` settles, ``store.array_mail``)."""
    by_id = {j.id: j for j in jobs if j.spec.mail_type}
    out = []
    for ev in events:
        job = by_id.get(ev.job_id)
        if job is None:
            continue
        if ev.kind is HistoryKind.WARNING and job.array_job_id is None:
            kind = idle_mail(job.spec.mail_type, ev.reason)
        elif ev.kind is HistoryKind.STATE:
            kind = mail_of(job, ev.old_state, ev.new_state)
        else:
            continue
        if kind is not None:
            out.append(
                {
                    "job_id": job.id,
                    "attempt": ev.attempt,
                    "kind": kind,
                    "to": job.spec.mail_user,
                    "tries": 0,
                    "next_at": ev.time,
                }
            )
    return out


def queue_mails(conn: Connection, mails: list[dict[str, Any]]) -> None:
    """Queue mails; one already queued (same job, attempt and kind) stays as it is."""
    m = MAILS.c
    keys = [(x["job_id"], x["attempt"], x["kind"]) for x in mails]
    queued = set(
        conn.execute(
            select(m.job_id, m.attempt, m.kind).where(tuple_(m.job_id, m.attempt, m.kind).in_(keys))
        ).tuples()
    )
    fresh = [x for x, key in zip(mails, keys, strict=True) if key not in queued]
    if fresh:
        conn.execute(insert(MAILS), fresh)
