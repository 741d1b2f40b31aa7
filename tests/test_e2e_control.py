"""gcontrol end to end: hold/release, requeue of a running and of an ended job, show job."""

from __future__ import annotations

from tests.cluster import TEST_IMAGE, Cluster, wait_for

QUICK = f'image: {TEST_IMAGE}\ncommand: ["sh", "-c", "echo attempt $ROTA_ATTEMPT"]\nresources: {{gpus: 1}}\n'
SLEEP = f'image: {TEST_IMAGE}\ncommand: ["sleep", "300"]\nresources: {{gpus: 1}}\n'


def test_hold_release_requeue_and_show(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    held = cluster.submit(QUICK, "--hold")
    assert cluster.pending_reason(held) == "JobHeldUser"
    cluster.cli("gcontrol", "release", held, check=True)
    assert cluster.wait_state(held, "COMPLETED")["attempt"] == 1

    cluster.cli("gcontrol", "requeue", held, check=True)
    job = cluster.wait_state(held, "COMPLETED")
    assert job["attempt"] == 2
    assert "attempt 2" in cluster.cli("glogs", held, check=True).stdout
    assert "attempt 1" in cluster.cli("glogs", "--attempt", "1", held, check=True).stdout

    running = cluster.submit(SLEEP)
    cluster.wait_state(running, "RUNNING")
    cluster.cli("gcontrol", "requeue", running, check=True)
    wait_for(
        lambda: cluster.job(running)["attempt"] == 2 and cluster.job(running)["state"] == "RUNNING",
        60,
        what="requeued job running again",
    )
    cluster.cli("gcancel", running, check=True)
    cluster.wait_state(running, "CANCELLED")

    bad = cluster.cli("gcontrol", "hold", running)
    assert bad.returncode == 1 and "only pending jobs can be held" in bad.stderr

    show = cluster.cli("gcontrol", "show", "job", held, check=True).stdout
    assert "JobState: COMPLETED" in show
    assert "released by" in show and "requeued by" in show
    assert show.count("-> CONFIGURING") == 2
