"""Issue 25 item 5: idle grun sessions reclaimed. The fake NVML library (in a real agent)
reports 0 % utilisation; with short idle settings the session is left alone while its client
is attached, then, once the client is gone, warned (the next terminal opened in it shows the
warning, and so does the owner by mail) and ended TIMEOUT with reason Idle."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.cluster import TEST_IMAGE, Cluster
from tests.gpu_e2e import GpuCluster, gpus, wait_for
from tests.support.smtp import SmtpRelay
from tests.terminal import Terminal

IDLE_AFTER = 20.0
WARNED_BEFORE = 16.0  # warned 4 s into idling: 16 s left to look at the warning before the end


@pytest.fixture
def gc(cluster: Cluster, fake_nvml_lib: Path) -> GpuCluster:
    return GpuCluster(cluster, fake_nvml_lib)


def test_idle_session_is_kept_while_attached_then_warned_and_ended(gc: GpuCluster) -> None:
    with SmtpRelay() as relay:
        _kept_then_warned_and_ended(gc, relay)


def _kept_then_warned_and_ended(gc: GpuCluster, relay: SmtpRelay) -> None:
    gc.start(
        gpus(1),
        interactive_idle_after=IDLE_AFTER,
        interactive_idle_warning=WARNED_BEFORE,
        mail_relay=relay.address,
        mail_domain="lab.example",
    )
    argv = ["-m", "rota.cli.grun", "--image", TEST_IMAGE, "--gpus", "1", "--mail-type", "END"]
    argv += ["--pty", "sh"]
    term = Terminal(argv, gc.c.env)
    try:
        term.expect(b"$ ")
        (job,) = gc.c.jobs()
        assert job["interactive"] and job["state"] == "RUNNING"
        # idle GPUs, but a client is attached: kept, not warned (nor, then, ended)
        time.sleep(2 * (IDLE_AFTER - WARNED_BEFORE))
        job = gc.c.job(job["id"])
        assert (job["state"], job["warning"]) == ("RUNNING", "")
        term.send(b"echo still-here\r")
        term.expect(b"still-here")
    finally:
        term.close()  # the client goes away; the session's shell runs on
    wait_for(lambda: "WARN: idle session" in gc.queue_line(job["id"]), 30, what="idle warning")
    assert any("idle session" in e["reason"] for e in gc.events(job["id"]))
    entered = gc.c.cli("gattach", job["id"], "true", check=True)  # the terminal is told
    wait_for(lambda: relay.mails(), 60, what="the idle warning by mail")
    subject = str(relay.mails()[0][2]["Subject"]).strip()
    assert subject.startswith(f"rota Job_id={job['id']} Name=interactive Idle"), subject
    assert "rota: this session was warned: idle session: no client attached" in entered.stderr
    ended = gc.c.wait_state(job["id"], "TIMEOUT", timeout=60)
    assert ended["reason"] == "Idle"
