"""Issue 5 end to end: Docker engine trouble. Each test runs its agent against a PRIVATE dockerd
(own socket, data root, exec root and pid file) that it stops and restarts; the shared engine is
never touched."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import Api, PrivateDockerd, config_file

JOB = f"image: {TEST_IMAGE}\ncommand: [sh, -c, 'echo engine ok']\nresources: {{gpus: 1}}\n"


@pytest.fixture
def engine(test_image: str) -> Iterator[PrivateDockerd]:
    dockerd = PrivateDockerd()
    try:
        dockerd.start()
        dockerd.build_test_image()
        yield dockerd
    finally:
        dockerd.cleanup()


def _state(cluster: Cluster, short: str) -> tuple[str, str]:
    node = cluster.node(cluster.node_name(short)) or {}
    return node.get("state", ""), node.get("reason", "")


def test_engine_restart_makes_the_node_unhealthy_then_it_recovers(
    cluster: Cluster, engine: PrivateDockerd
) -> None:
    cluster.start_scheduler(
        "--config", config_file(cluster, node_timeout=20), "--open-registration"
    )
    cluster.start_agent("n1", 1, "--docker-host", engine.url)
    assert cluster.wait_state(cluster.submit(JOB), "COMPLETED")["exit_code"] == 0

    engine.stop()
    _state_name, reason = wait_for(
        lambda: (s := _state(cluster, "n1"))[0] == "DOWN" and s, 60, what="node unhealthy"
    )
    assert "container engine" in reason
    assert "container engine" in cluster.cli("ginfo", check=True).stdout
    waiting = cluster.submit(JOB)
    assert cluster.pending_reason(waiting) == "NodeDown"

    engine.start()
    wait_for(
        lambda: _state(cluster, "n1")[0] == "IDLE" or cluster.job(waiting)["state"] != "PENDING",
        60,
        what="node recovers by itself",
    )
    done = cluster.wait_state(waiting, "COMPLETED", "FAILED", timeout=30)
    assert (done["state"], done["attempt"]) == ("COMPLETED", 1)
    assert cluster.cli("glogs", waiting, check=True).stdout == "engine ok\n"


def test_launch_on_a_down_engine_goes_back_to_pending(
    cluster: Cluster, engine: PrivateDockerd
) -> None:
    # slow heartbeats: the scheduler still thinks the engine is fine when the launch goes out
    # (the engine's stop, gsub and a pass fit well in one interval, also on a loaded machine)
    config = config_file(cluster, heartbeat_interval=15, node_timeout=75, node_grace=300)
    cluster.start_scheduler("--config", config, "--open-registration")
    cluster.start_agent("n1", 1, "--docker-host", engine.url)
    name = cluster.node_name("n1")
    api = Api(cluster.address, cluster.token)
    try:
        beat = api.node(name).last_heartbeat
        wait_for(lambda: api.node(name).last_heartbeat != beat, 45, 0.05, what="a heartbeat")
        engine.stop()
        job = cluster.submit(JOB)
        wait_for(
            lambda: any("engine on" in e.reason for e in api.events(job)),
            45,
            what="the launch hit the down engine",
        )
        assert api.state(job) == "PENDING"
        assert _state(cluster, "n1")[0] == "DOWN"
        engine.start()
        wait_for(lambda: api.state(job) == "COMPLETED", 90, what="job runs after recovery")
        states = [e.new_state for e in api.events(job) if e.kind == "state"]
        assert "FAILED" not in states
        assert states == [
            "PENDING",
            "CONFIGURING",
            "PENDING",
            "CONFIGURING",
            "RUNNING",
            "COMPLETED",
        ]
    finally:
        api.close()
