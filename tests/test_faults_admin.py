"""Issue 5 end to end: node registration with join tokens, refused agents, drain / resume /
remove through ``gadmin``, and the scheduler's graceful SIGTERM shutdown."""

from __future__ import annotations

import json
import signal

from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import (
    Api,
    add_node,
    config_file,
    restart_scheduler,
    spawn_agent,
    token_file,
    wait_gone,
)

SLEEP = f"image: {TEST_IMAGE}\ncommand: [sleep, '600']\nresources: {{gpus: 1}}\n"


def _nodes_view(cluster: Cluster) -> list[dict]:
    """What ginfo shows minus the fields that move by themselves."""
    nodes = json.loads(cluster.cli("ginfo", "--json", check=True).stdout)
    for n in nodes:
        for key in ("last_heartbeat", "gpus", "reason_time"):
            n.pop(key, None)
    return nodes


def test_wrong_token_and_unregistered_node_are_refused_and_change_nothing(
    cluster: Cluster,
) -> None:
    cluster.start_scheduler("--config", config_file(cluster))
    token = add_node(cluster, "n1", "--labels", "rack=r7")
    cluster.start_agent("n1", 1, "--token-file", token_file(cluster, token))
    job = cluster.submit(SLEEP)
    cluster.wait_state(job, "RUNNING")
    before_nodes, before_jobs = _nodes_view(cluster), cluster.jobs()

    wrong = spawn_agent(
        cluster,
        "wrong",
        cluster.node_name("n1"),
        "--token-file",
        token_file(cluster, "not-the-token"),
    )
    assert wait_gone(wrong) == 1
    assert "wrong join token for node" in cluster.log("wrong")
    ghost = spawn_agent(
        cluster, "ghost", cluster.node_name("ghost"), "--token-file", token_file(cluster, token)
    )
    assert wait_gone(ghost) == 1
    ghost_log = cluster.log("ghost")
    assert "is not registered" in ghost_log and "gadmin node add" in ghost_log

    assert _nodes_view(cluster) == before_nodes
    assert cluster.jobs() == before_jobs
    node = cluster.node(cluster.node_name("n1"))
    assert node is not None and node["state"] == "ALLOCATED"
    assert node["labels"]["rack"] == "r7"
    again = cluster.cli("gadmin", "node", "add", cluster.node_name("n1"))
    assert again.returncode == 1 and "already registered" in again.stderr


def test_drain_resume_and_ginfo_shows_who_and_since(cluster: Cluster) -> None:
    cluster.start_scheduler("--config", config_file(cluster))
    name = cluster.node_name("n1")
    cluster.start_agent("n1", 1, "--token-file", token_file(cluster, add_node(cluster, "n1")))
    running = cluster.submit(SLEEP)
    cluster.wait_state(running, "RUNNING")
    out = cluster.cli("gadmin", "node", "drain", name, "--reason", "fan noise", check=True)
    assert "DRAINING" in out.stdout
    node = cluster.node(name)
    assert node is not None
    assert (node["state"], node["reason"]) == ("DRAINING", "fan noise")
    assert node["reason_by"] and node["reason_time"]
    table = cluster.cli("ginfo", check=True).stdout
    assert f"fan noise by {node['reason_by']} since" in table
    waiting = cluster.submit(SLEEP)
    cluster.cli("gcancel", running, check=True)
    cluster.wait_state(running, "CANCELLED")
    wait_for(lambda: (n := cluster.node(name)) and n["state"] == "DRAINED", 60, what="DRAINED")
    assert cluster.job(waiting)["state"] == "PENDING"
    listing = cluster.cli("gadmin", "node", "list", check=True).stdout
    assert "DRAINED" in listing and "fan noise" in listing
    cluster.cli("gadmin", "node", "resume", name, check=True)
    cluster.wait_state(waiting, "RUNNING")
    missing = cluster.cli("gadmin", "node", "drain", "nope", "--reason", "x")
    assert missing.returncode == 1 and "not registered" in missing.stderr
    no_reason = cluster.cli("gadmin", "node", "drain", name)
    assert no_reason.returncode == 2


def test_remove_refused_while_jobs_run_unless_forced(cluster: Cluster) -> None:
    cluster.start_scheduler("--config", config_file(cluster))
    n1, n2 = cluster.node_name("n1"), cluster.node_name("n2")
    agent1 = cluster.start_agent(
        "n1", 2, "--token-file", token_file(cluster, add_node(cluster, "n1"))
    )
    again = cluster.submit(SLEEP + "requeue: true\nname: again\n")
    once = cluster.submit(SLEEP + "name: once\n")
    cluster.wait_state(again, "RUNNING")
    cluster.wait_state(once, "RUNNING")
    refused = cluster.cli("gadmin", "node", "remove", n1)
    assert refused.returncode == 1 and "--force" in refused.stderr
    assert cluster.node(n1) is not None

    cluster.start_agent("n2", 1, "--token-file", token_file(cluster, add_node(cluster, "n2")))
    out = cluster.cli("gadmin", "node", "remove", n1, "--force", check=True).stdout
    assert f"Requeued job(s): {again}" in out and f"Ended NODE_FAIL: {once}" in out
    assert cluster.wait_state(once, "NODE_FAIL")["attempt"] == 1
    moved = cluster.wait_state(again, "RUNNING")
    assert moved["nodes"] == [n2] and moved["attempt"] == 2
    assert wait_gone(agent1) == 1, "the removed node's agent is refused and exits"
    assert "is not registered" in cluster.log("agent-n1")
    assert cluster.node(n1) is None
    wait_for(
        lambda: not [c for c in cluster.containers(all_states=False) if n1 in c],
        30,
        what="the removed node's containers stopped",
    )


def test_sigterm_stops_the_scheduler_gracefully_and_nothing_is_lost(cluster: Cluster) -> None:
    sched = cluster.start_scheduler("--config", config_file(cluster), "--open-registration")
    cluster.start_agent("n1", 1)
    gate = cluster.root / "gate"  # the job ends once the scheduler is gone
    gate.mkdir(mode=0o755)
    script = "until [ -e /gate/go ]; do sleep 0.1; done"
    mounts = f"mounts: ['{gate}:/gate:ro']"
    job = cluster.submit(
        f"image: {TEST_IMAGE}\ncommand: [sh, -c, '{script}']\nresources: {{gpus: 1}}\n{mounts}\n"
    )
    cluster.wait_state(job, "RUNNING")
    queued = cluster.submit(SLEEP)
    sched.send_signal(signal.SIGTERM)
    assert wait_gone(sched, 60) == 0
    (gate / "go").write_text("")
    log = cluster.log("scheduler")
    assert "finishing the current pass" in log and "rota scheduler stopped" in log
    assert cluster.cli("gqueue").returncode == 1, "it no longer accepts requests"
    restart_scheduler(cluster, "--config", config_file(cluster), "--open-registration")
    api = Api(cluster.address, cluster.token)
    try:
        wait_for(lambda: api.state(job) == "COMPLETED", 60, what="job completes after restart")
        wait_for(lambda: api.state(queued) == "RUNNING", 60, what="queued job runs")
        assert [e.attempt for e in api.events(job)][-1] == 1
    finally:
        api.close()
