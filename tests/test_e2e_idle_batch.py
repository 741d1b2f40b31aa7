"""Issue 25 item 5, batch jobs: with ``idle_gpu_action: requeue`` a job whose GPUs stay at 0 %
(the fake NVML library, a real agent and container) is warned, then requeued while it has
requeues left under ``max_requeue``, then cancelled; its owner, who asked for END mail, gets
the warning by mail through the SMTP relay; ``gacct --efficiency`` flags it ``reclaimed``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster import Cluster
from tests.gpu_e2e import SLEEPER, GpuCluster, gpus, wait_for
from tests.support.smtp import SmtpRelay


@pytest.fixture
def gc(cluster: Cluster, fake_nvml_lib: Path) -> GpuCluster:
    return GpuCluster(cluster, fake_nvml_lib)


def test_idle_batch_job_is_requeued_then_cancelled_and_flagged(gc: GpuCluster) -> None:
    with SmtpRelay() as relay:
        _requeued_then_cancelled(gc, relay)


def _requeued_then_cancelled(gc: GpuCluster, relay: SmtpRelay) -> None:
    gc.start(
        gpus(1),
        idle_gpu_warn_after=1.0,
        idle_gpu_cancel_after=3.0,
        idle_gpu_action="requeue",
        max_requeue=1,
        mail_relay=relay.address,
        mail_domain="lab.example",
    )
    job = gc.c.submit(SLEEPER + "mail_type: [END]\nmail_user: ann@lab.example\n")
    gc.c.wait_state(job, "RUNNING")
    wait_for(
        lambda: any("requeued: its GPUs were idle" in e["reason"] for e in gc.events(job)),
        30,
        what="idle requeue",
    )
    warnings = [e["reason"] for e in gc.events(job) if e.get("kind") == "warning"]
    assert any("requeued at 3s idle" in w for w in warnings)
    done = gc.c.wait_state(job, "CANCELLED", timeout=60)
    assert done["reason"].startswith("cancelled: its GPUs were idle")
    assert done["attempt"] == 2, "requeued once (max_requeue: 1), then cancelled"
    wait_for(lambda: len(relay.mails()) >= 3, 30, what="two idle warnings and the end")
    mails = relay.mails()
    subjects = sorted(str(m["Subject"]).strip() for _, (to,), m in mails if to == "ann@lab.example")
    idle = f"rota Job_id={job} Name=sleeper Idle, its GPUs at 0% utilisation"
    assert subjects[0].startswith(f"rota Job_id={job} Name=sleeper Ended")
    assert [s.startswith(idle) for s in subjects[1:]] == [True, True], "one per attempt"
    flagged = json.loads(gc.c.cli("gacct", "--efficiency", "--json", check=True).stdout)
    assert {r["id"]: r["flags"] for r in flagged}[job] == ["idle", "reclaimed"]
