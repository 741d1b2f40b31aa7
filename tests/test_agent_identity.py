"""Two clusters whose agents share a node name on one Docker engine (two users' `rota up` on
one workstation, both named after the host): each runs its own job 1 attempt 1, and a
restarted agent adopts only its own container, never the other cluster's."""

from __future__ import annotations

import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from rota.agent.runtime.docker_runtime import DockerRuntime
from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import config_file


def _job(out: Path) -> str:
    return (
        f"image: {TEST_IMAGE}\n"
        "command: [sh, -c, 'until [ -e /out/go ]; do sleep 0.1; done']\n"
        f"mounts: [{{source: {out}, target: /out}}]\n"
    )


def _ids(node: str) -> list[tuple[str, str]]:
    """(rota.agent label, container id) of every container of node name ``node``."""
    listing = ["docker", "ps", "-a", "--filter", f"label=rota.node={node}", "--format"]
    out = subprocess.run(
        [*listing, '{{.Label "rota.agent"}} {{.ID}}'], capture_output=True, text=True, check=True
    ).stdout
    return [(owner, cid) for owner, _, cid in (line.partition(" ") for line in out.splitlines())]


def _owners(node: str) -> list[str]:
    """The rota.agent label of every container of node name ``node``."""
    return [owner for owner, _ in _ids(node)]


def test_two_clusters_with_one_node_name_keep_their_own_containers(
    cluster: Cluster, test_image: str
) -> None:
    other_root = Path(tempfile.mkdtemp(prefix="rota-test-"))
    other_root.chmod(0o755)
    other = Cluster(other_root, tag=cluster.tag)  # the same node names: n1-TAG
    try:
        outs = []
        for c in (cluster, other):
            c.start_scheduler("--config", config_file(c), "--open-registration")
            c.start_agent("n1", 1)
            out = c.root / "out"
            out.mkdir()
            out.chmod(0o777)
            outs.append(out)
        first = cluster.submit(_job(outs[0]))
        second = other.submit(_job(outs[1]))
        assert first == second == "1"
        cluster.wait_state(first, "RUNNING")
        other.wait_state(second, "RUNNING")  # its container's name did not collide
        node = cluster.node_name("n1")
        owners = _owners(node)
        assert len(owners) == 2 and len(set(owners)) == 2, owners
        # GPU processes in the first cluster's container are no job of the second's agent
        seen = DockerRuntime(node, other.root / f"agent-{node}", lambda e: None, time.time, "env")
        ids = dict(_ids(node))
        assert seen.container_info(ids[seen.agent_id]) is not None
        (foreign,) = (cid for owner, cid in ids.items() if owner != seen.agent_id)
        assert seen.container_info(foreign) is None

        # The second cluster's agent restarts: it adopts its own job, not the first's.
        other.kill("agent-n1", signal.SIGKILL)
        other.start_agent("n1", 1, wait=False)
        wait_for(lambda: "adopted running job" in other.log("agent-n1"), 20, what="adoption")
        assert other.log("agent-n1").count("adopted running job") == 1, other.log("agent-n1")

        (outs[1] / "go").touch()
        assert other.wait_state(second, "COMPLETED")["exit_code"] == 0
        wait_for(lambda: len(_owners(node)) == 1, 20, what="the second cluster's container gone")
        assert cluster.job(first)["state"] == "RUNNING"  # untouched by the other agent
        (outs[0] / "go").touch()
        assert cluster.wait_state(first, "COMPLETED")["exit_code"] == 0
    finally:
        other.stop()
        subprocess.run(["rm", "-rf", str(other_root)], check=False)


def test_an_upgraded_agent_adopts_its_older_unlabelled_containers(
    searchable_dir: Path, test_image: str
) -> None:
    """Containers an agent of an older rota started carry no rota.agent label: the upgraded
    agent (same node name, a new agent-id file) adopts them, never one with another's id."""
    node = f"legacy-{uuid.uuid4().hex[:6]}"
    base = ["docker", "run", "-d", "--label", f"rota.node={node}", "--label", "rota.attempt=1"]
    legacy = ["--label", "rota.job_id=7", "--label", "rota.display_id=7"]
    foreign = ["--label", "rota.job_id=8", "--label", "rota.agent=0123456789abcdef"]
    try:
        for labels in (legacy, foreign):
            cmd = [*base, *labels, test_image, "sleep", "60"]
            subprocess.run(cmd, check=True, capture_output=True)
        runtime = DockerRuntime(node, searchable_dir / "agent", lambda e: None, time.time, "env")
        runtime.adopt()
        assert [(a.job_id, a.attempt) for a in runtime.attempts()] == [(7, 1)]
        assert (searchable_dir / "agent" / "agent-id").read_text().strip() == runtime.agent_id
    finally:
        ids = [cid for _, cid in _ids(node)]
        subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)


def test_a_damaged_agent_id_file_is_an_error_naming_it(tmp_path: Path) -> None:
    """Eighth attack: an agent-id file of binary bytes stopped the agent with the decoder's
    words (``'utf-8' codec can't decode byte 0xff``) and not the file's name, a huge one was
    read whole into memory, a directory in its place gave ``Is a directory`` alone. Each is
    now one error naming the file; only its first bytes are read."""
    import pytest

    from rota.agent.runtime.identity import agent_id

    path = tmp_path / "agent-id"
    for damage in (b"\xff\xfe" * 8, b"0" * (64 << 20), b"0123456789abcdeX\n"):
        path.write_bytes(damage)
        with pytest.raises(ValueError, match="agent-id does not hold an agent id"):
            agent_id(tmp_path)
    path.unlink()
    path.mkdir()
    with pytest.raises(ValueError, match="agent-id cannot be read"):
        agent_id(tmp_path)
    path.rmdir()
    made = agent_id(tmp_path)
    assert agent_id(tmp_path) == made and len(made) == 16
