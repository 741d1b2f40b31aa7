"""Job-end webhooks: queued with the job's end, posted off the core thread to a real HTTP
server on 127.0.0.1, retried with backoff, recorded as job events, and kept across a restart."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rota.destinations import parse_networks
from rota.jobspec import JobSpec, SpecError, parse_job_file
from rota.scheduler.cluster.model import HistoryKind
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.jobs import SubmitItem
from rota.scheduler.notifier import HttpPoster, Notifier
from rota.states import JobState
from tests.support.core import Harness
from tests.support.webhooks import LOOPBACK, WebhookServer


def _harness(tmp_path: Path, **config: object) -> Harness:
    return Harness(
        tmp_path,
        notify_backoff=1.0,
        notify_timeout=0.5,
        webhook_allowed_networks=LOOPBACK,
        **config,
    )


def _run_job(h: Harness, url: str, exit_code: int = 0, **spec: object) -> str:
    """Submit a job with a webhook, launch it on n1, and let it exit with ``exit_code``."""
    if "n1" not in h.sessions:
        h.connect("n1")
    job = h.submit(gpus=1, name="train", notify_url=url, **spec)
    h.schedule()
    h.event("n1", job, "STARTED")
    h.event("n1", job, "EXITED", exit_code=exit_code)
    return job


async def _drive(
    h: Harness, done: Callable[[], bool], timeout: float = 20.0, step: float = 1.0
) -> None:
    """Run a notifier over the harness's engine until ``done``, moving its clock ``step``
    seconds every 20 ms so backoffs pass quickly."""
    engine = h.engine
    notifier = Notifier(
        engine.claim_notifications,
        engine.notification_result,
        HttpPoster(h.config.notify_timeout, 4, parse_networks(h.config.webhook_allowed_networks)),
        4,
        0.02,
    )
    notifier.start()
    try:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, "webhook not settled in time"
            h.clock.now += step
            await asyncio.sleep(0.02)
        await notifier.idle()  # the outcome of the last post is recorded
    finally:
        await notifier.stop()


def _notes(h: Harness, job: str) -> list[str]:
    return [e.reason for e in h.s.jobs.get(job)[1] if "notification" in e.reason]


def test_a_failed_job_posts_its_webhook_with_the_job_figures(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    with WebhookServer(200) as hook:
        job = _run_job(h, hook.url, exit_code=3)
        asyncio.run(_drive(h, lambda: bool(hook.received)))
    (body,) = hook.received
    record = h.s.jobs.get(job)[0]
    assert body["job_id"] == job and body["name"] == "train" and body["user"] == "ann"
    assert body["state"] == "FAILED" and body["event"] == "fail" and body["exit_code"] == 3
    assert body["gpus"] == [{"node": "n1", "indices": [0], "uuids": ["GPU-0"]}]
    assert body["end_time"] == record.end_time and body["submit_time"] == record.submit_time
    (note,) = _notes(h, job)
    assert "delivered" in note and "token" not in note  # the query may hold a secret


def test_a_receiver_failing_twice_gets_the_webhook_on_the_third_try(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    with WebhookServer(500, 503, 200) as hook:
        job = _run_job(h, hook.url)
        asyncio.run(_drive(h, lambda: bool(hook.received)))
    assert hook.tries == 3 and hook.received[0]["state"] == "COMPLETED"
    events = [e for e in h.s.jobs.get(job)[1] if "notification" in e.reason]
    assert [e.kind for e in events] == [HistoryKind.WARNING, HistoryKind.WARNING, HistoryKind.INFO]
    assert "failed (try 1 of 8)" in events[0].reason and "500" not in events[0].reason
    assert "next in 1s" in events[0].reason and "next in 2s" in events[1].reason  # backoff
    assert "delivered" in events[2].reason and "try 3" in events[2].reason


def test_on_selects_which_ends_post(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    with WebhookServer(200) as hook:
        _run_job(h, hook.url, exit_code=0, notify_on=("fail", "timeout"))
        failed = _run_job(h, hook.url, exit_code=1, notify_on=("fail", "timeout"))
        asyncio.run(_drive(h, lambda: bool(hook.received)))
    assert [b["job_id"] for b in hook.received] == [failed]


def test_a_silent_receiver_is_given_up_while_scheduling_goes_on(tmp_path: Path) -> None:
    h = _harness(tmp_path, notify_tries=3)
    with WebhookServer(None) as hook:
        job = _run_job(h, hook.url)

        async def scenario() -> list[float]:
            waits: list[float] = []
            drive = asyncio.create_task(
                _drive(h, lambda: any("given up" in n for n in _notes(h, job)), step=5.0)
            )
            while not drive.done():  # posts hang meanwhile: submissions are still answered
                began = time.monotonic()
                await h.engine.jobs.submit(
                    [SubmitItem(JobSpec("img", ("true",)))], Principal("bob"), False
                )
                waits.append(time.monotonic() - began)
                await asyncio.sleep(0.05)
            await drive
            return waits

        waits = asyncio.run(scenario())
    assert hook.tries == 3
    assert len(waits) > 10 and max(waits) < 0.4, waits
    notes = _notes(h, job)
    assert len(notes) == 3 and "given up after 3 tries" in notes[-1]
    assert all("failed" in n and "timed out" not in n for n in notes), notes


def test_a_queued_webhook_survives_a_scheduler_restart(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    with WebhookServer(200) as hook:
        job = _run_job(h, hook.url)  # ended and committed; nothing posted yet
        h.restart()
        asyncio.run(_drive(h, lambda: bool(hook.received)))
    assert [b["job_id"] for b in hook.received] == [job]


def test_jobs_without_notify_post_nothing(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    h.connect("n1")
    job = h.submit(gpus=1)
    h.schedule()
    h.event("n1", job, "EXITED", exit_code=0)
    assert h.state(job) is JobState.COMPLETED
    assert asyncio.run(h.engine.claim_notifications(10)) == []


@pytest.mark.parametrize(
    ("notify", "field", "says"),
    [
        ({"url": "ftp://host/x"}, "notify.url", "http:// or https://"),
        ({"url": "file:///etc/passwd"}, "notify.url", "http:// or https://"),
        ({"url": "http://u:p@host/x"}, "notify.url", "password"),
        ({"url": "http://host/" + "x" * 3000}, "notify.url", "at most 2048"),
        ({"url": "http://host/x", "on": ["end", "later"]}, "notify.on", "later"),
        ({"url": "http://host/x", "when": ["end"]}, "notify.when", "allowed: url, on"),
        ({"on": ["end"]}, "notify.url", "expected a string"),
    ],
)
def test_bad_notify_fields_are_refused_by_name(
    notify: dict[str, object], field: str, says: str
) -> None:
    with pytest.raises(SpecError) as err:
        parse_job_file({"image": "img", "command": "true", "notify": notify})
    assert err.value.field == field and says in str(err.value)


def test_notify_on_as_written_in_a_job_file_is_read_as_on() -> None:
    """YAML 1.1 reads a bare ``on`` key as true; the documented form still works."""
    from rota.yamlload import load

    text = "image: img\ncommand: 'true'\nnotify: {url: 'http://host/x', on: [fail, idle]}\n"
    spec = parse_job_file(load(text))
    assert (spec.notify_url, spec.notify_on) == ("http://host/x", ("fail", "idle"))
