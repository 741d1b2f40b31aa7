"""Issue 25 item 5: the idle rules' warning and end reach the job's webhook. A real agent with
the fake NVML library reports 0 % utilisation, the scheduler runs short idle settings, and a
real HTTP server on 127.0.0.1 (allowed by ``webhook_allowed_networks``) takes the posts: a grun
session gets nothing while its client is attached, then ``idle_warning`` (also shown on the
job's page in a real browser), ``idle_end`` and its end (``timeout``, reason Idle), in that
order; an idle batch job gets a warning and ``idle_end`` per attempt (requeue, then cancel)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import wait_text
from tests.cluster import TEST_IMAGE, Cluster, free_port
from tests.gpu_e2e import SLEEPER, GpuCluster, gpus, wait_for
from tests.support.webhooks import LOOPBACK, WebhookServer
from tests.terminal import Terminal
from tests.test_e2e_web import log_in

IDLE_AFTER = 8.0
WARNED_BEFORE = 6.0


@pytest.fixture
def gc(cluster: Cluster, fake_nvml_lib: Path) -> GpuCluster:
    return GpuCluster(cluster, fake_nvml_lib)


def test_idle_session_webhooks_warning_then_end_and_none_while_attached(
    gc: GpuCluster, browser: WebDriver
) -> None:
    port = free_port()
    gc.start(
        gpus(1),
        http_listen=f"127.0.0.1:{port}",
        interactive_idle_after=IDLE_AFTER,
        interactive_idle_warning=WARNED_BEFORE,
        webhook_allowed_networks=list(LOOPBACK),
    )
    with WebhookServer() as hook:
        argv = ["-m", "rota.cli.grun", "--image", TEST_IMAGE, "--gpus", "1"]
        argv += ["--notify", hook.url, "--pty", "sh"]
        term = Terminal(argv, gc.c.env)
        try:
            term.expect(b"$ ")
            (job,) = gc.c.jobs()
            started = time.monotonic()
            log_in(browser, f"http://127.0.0.1:{port}", gc.c.token)
            browser.get(f"http://127.0.0.1:{port}/#job/{job['id']}")  # the page: no client
            time.sleep(max(0.0, 2 * IDLE_AFTER - (time.monotonic() - started)))
            term.send(b"echo still-here\r")
            term.expect(b"still-here")
            assert hook.received == [], "an attached session is neither warned nor ended"
            assert gc.c.job(job["id"])["state"] == "RUNNING"
        finally:
            term.close()  # the client goes away; the session's shell runs on
        shown = wait_text(browser, "#job-fields", "idle session: no client attached")
        assert "Warning" in shown
        wait_for(lambda: hook.received, 30, what="the idle_warning webhook")
        gc.c.wait_state(job["id"], "TIMEOUT", timeout=60)
        wait_for(lambda: len(hook.received) >= 3, 30, what="idle_end and the end webhook")
    warning, end, ended = hook.received
    events = [warning["event"], end["event"], ended["event"]]
    assert events == ["idle_warning", "idle_end", "timeout"]
    node = gc.node_name
    for body in (warning, end):
        assert (body["job_id"], body["user"], body["interactive"]) == (job["id"], job["user"], True)
        assert body["nodes"] == [node] and body["gpus"][0]["node"] == node
        assert body["gpus"][0]["indices"] == [0] and body["action"] == "end"
        assert body["rule"] == "interactive_idle_after"
    assert warning["message"].startswith("idle session: no client attached")
    assert warning["at"] == pytest.approx(warning["idle_since"] + IDLE_AFTER)
    assert warning["idle_for"] >= IDLE_AFTER - WARNED_BEFORE
    assert warning["time"] < warning["at"] <= end["time"]
    assert end["idle_since"] == warning["idle_since"] and end["idle_for"] >= IDLE_AFTER
    assert (ended["state"], ended["reason"]) == ("TIMEOUT", "Idle")
    shown = [e["reason"] for e in gc.events(job["id"]) if "notification delivered" in e["reason"]]
    assert [s.split(" ", 1)[0] for s in shown] == ["idle_warning", "idle_end", "notification"]


def test_idle_batch_job_webhooks_per_attempt_requeue_then_cancel(gc: GpuCluster) -> None:
    gc.start(
        gpus(1),
        idle_gpu_warn_after=1.0,
        idle_gpu_cancel_after=3.0,
        idle_gpu_action="requeue",
        max_requeue=1,
        webhook_allowed_networks=list(LOOPBACK),
    )
    with WebhookServer() as hook:
        job = gc.c.submit(SLEEPER + f"notify: {{url: '{hook.url}', on: [idle]}}\n")
        gc.c.wait_state(job, "CANCELLED", timeout=60)
        wait_for(lambda: len(hook.received) >= 4, 30, what="two warnings and two ends")
        time.sleep(1.0)  # nothing more: `on: [idle]` leaves the end (cancel) out
    seen = [(b["event"], b["action"], b["attempt"]) for b in hook.received]
    assert seen == [
        ("idle_warning", "requeue", 1),
        ("idle_end", "requeue", 1),
        ("idle_warning", "cancel", 2),
        ("idle_end", "cancel", 2),
    ]
    first = hook.received[0]
    assert first["interactive"] is False and first["rule"] == "idle_gpu_warn_after"
    assert first["at"] == pytest.approx(first["idle_since"] + 3.0)
    assert hook.received[3]["rule"] == "idle_gpu_cancel_after"
