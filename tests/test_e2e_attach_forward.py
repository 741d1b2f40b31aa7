"""Issue 25 end to end: gattach into a running job (owner yes, another user no, recorded),
rota forward to busybox httpd inside a job, rota proxy both ways, and grun while pending."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for

SERVERS = f"""
name: servers
image: {TEST_IMAGE}
command: ["sh", "-c", "httpd -p 8080 -h /www; nc -ll -p 7000 -e cat"]
mounts: [{{source: "{{www}}", target: /www, read_only: true}}]
"""

SLEEPER = f"""
name: sleeper
image: {TEST_IMAGE}
command: ["sleep", "600"]
resources: {{gpus: 1}}
"""


def start_cluster(cluster: Cluster) -> None:
    cluster.start_scheduler("--open-registration", "--allowed-mount", str(cluster.root))
    cluster.start_agent("n1", gpus=1)


def start_servers(cluster: Cluster, as_user: dict[str, str] | None = None) -> str:
    """A running job serving /www on 8080 (httpd) and echoing on 7000 (nc -e cat)."""
    www = cluster.root / "www"
    www.mkdir(mode=0o755, exist_ok=True)
    (www / "index.html").write_text("hello from inside the job\n")
    path = cluster.write_job("servers.yaml", SERVERS.replace("{www}", str(www)))
    out = subprocess.run(
        [sys.executable, "-m", "rota.cli.gsub", "--parsable", str(path)],
        env={**cluster.env, **(as_user or {})},
        capture_output=True,
        text=True,
        check=True,
    )
    job_id = out.stdout.strip()
    cluster.wait_state(job_id, "RUNNING")
    return job_id


def run_as(
    cluster: Cluster, token: str, *args: str, data: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        env={**cluster.env, "ROTA_TOKEN": token},
        input=data,
        capture_output=True,
        timeout=120,
    )


def test_gattach_owner_runs_commands_other_user_refused_and_recorded(cluster: Cluster) -> None:
    start_cluster(cluster)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    job_id = start_servers(cluster, {"ROTA_TOKEN": alice})
    mine = run_as(
        cluster,
        alice,
        "rota.cli.gattach",
        job_id,
        "sh",
        "-c",
        "cat; id -u; exit 7",
        data=b"typed\n",
    )
    assert mine.returncode == 7, mine.stderr
    typed, uid = mine.stdout.decode().split()
    assert typed == "typed"
    container_user = subprocess.run(
        ["docker", "inspect", "-f", "{{.Config.User}}", *cluster.containers(all_states=False)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert uid == container_user.split(":")[0]  # as the job's user
    theirs = run_as(cluster, bob, "rota.cli.gattach", job_id, "id")
    assert theirs.returncode == 1
    assert b"belongs to alice; only its owner or an admin" in theirs.stderr
    assert theirs.stdout == b""
    shown = cluster.cli("gcontrol", "show", "job", job_id, check=True).stdout
    assert "gattach by alice" in shown
    audit = cluster.cli("gadmin", "audit", check=True).stdout
    assert "Interact/exec" in audit and "alice" in audit
    refused = [line for line in audit.splitlines() if "bob" in line]
    assert refused and "PERMISSION_DENIED" in " ".join(refused)


def test_forward_reaches_httpd_and_proxy_carries_bytes_both_ways(cluster: Cluster) -> None:
    start_cluster(cluster)
    job_id = start_servers(cluster)
    port = free_port()
    forward = subprocess.Popen(
        [sys.executable, "-m", "rota.cli.rota_main", "forward", job_id, f"{port}:8080"],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert forward.stdout is not None
        assert b"Forwarding 127.0.0.1:" in forward.stdout.readline()
        for _ in range(2):  # one session per connection
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=30) as r:
                assert r.read() == b"hello from inside the job\n"
    finally:
        forward.send_signal(signal.SIGINT)
        forward.wait(timeout=30)
    data = bytes(range(256)) * 4096  # 1 MiB through nc -e cat and back
    proxied = run_as(
        cluster, cluster.token, "rota.cli.rota_main", "proxy", job_id, "7000", data=data
    )
    assert proxied.returncode == 0, proxied.stderr
    assert proxied.stdout == data
    # a job that ended has no port: forward says so at once instead of "Forwarding ..."
    cluster.cli("gcancel", job_id, check=True)
    cluster.wait_state(job_id, "CANCELLED")
    ended = cluster.cli("rota", "forward", job_id, f"{free_port()}:8080")
    assert ended.returncode == 1
    assert ended.stdout == ""
    assert f"job {job_id} is CANCELLED, not running" in ended.stderr


def test_grun_shows_pending_reason_and_ctrl_c_cancels(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    # a session that can never fit is refused at once, the line naming the field once
    refused = cluster.cli("grun", "--image", TEST_IMAGE, "--gpus", "2", "true")
    assert refused.returncode == 2
    assert ": error: session: resources.gpus: 2 GPU(s) per node, but " in refused.stderr
    busy = cluster.submit(SLEEPER)
    cluster.wait_state(busy, "RUNNING")
    grun = subprocess.Popen(
        [sys.executable, "-m", "rota.cli.grun", "--image", TEST_IMAGE, "--gpus", "1", "true"],
        env=cluster.env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert grun.stderr is not None
    lines = iter(grun.stderr.readline, b"")
    line = next(x.decode() for x in lines if b"(" in x or not x.startswith(b"grun: job"))
    assert "queued and waiting for resources (Resources)" in line, line
    (waiting,) = [j for j in cluster.jobs() if j["state"] == "PENDING"]
    assert waiting["interactive"] is True
    grun.send_signal(signal.SIGINT)
    assert grun.wait(timeout=30) == 130
    assert f"cancelled pending job {waiting['id']}" in grun.stderr.read().decode()
    cluster.wait_state(waiting["id"], "CANCELLED")


def test_grun_of_a_quick_command_gets_its_output_and_exit_code(
    cluster: Cluster, tmp_path: Path
) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rota.cli.grun",
            "--image",
            TEST_IMAGE,
            "sh",
            "-c",
            "echo quick; exit 4",
        ],
        env=cluster.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    assert result.stdout == b"quick\n"
    assert result.returncode == 4
    # srun's spelling of the request (srun -N 1 --gres=gpu:1 --pty bash) asks the same
    gres = cluster.cli(
        "grun",
        "--image",
        TEST_IMAGE,
        "-N",
        "1",
        "--gres=gpu:1",
        "sh",
        "-c",
        "echo $CUDA_VISIBLE_DEVICES",
    )
    assert (gres.returncode, gres.stdout) == (0, "0\n"), gres.stderr
    other = cluster.cli("grun", "--image", TEST_IMAGE, "--gres=gpu:1,lscratch:10", "true")
    assert other.returncode == 2
    assert "--gres: 'gpu:1,lscratch:10': rota schedules GPUs only" in other.stderr
    wait_for(lambda: not cluster.containers(), 60, what="the session's container removed")
