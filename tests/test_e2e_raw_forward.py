"""Issue 25's raw forward path end to end: ``rota forward``/``rota proxy`` through the HTTP port
(``Upgrade: rota-tcp``) with the agent dialling the data connection back with a ticket; the
owner check and its audit, bad tickets refused, and both fallbacks (no HTTP port for the
client: gRPC; no data connection from the agent: relayed over its stream)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request

from tests.cluster import Cluster, free_port, wait_for
from tests.test_e2e_attach_forward import run_as, start_servers


def start_cluster(cluster: Cluster, host: str = "127.0.0.1") -> str:
    """A scheduler serving HTTP on ``host`` (the commands told where) and one node; the HTTP
    address."""
    http = f"{host}:{free_port()}"
    cluster.env_extra["ROTA_HTTP"] = http
    cluster.start_scheduler(
        "--open-registration", "--allowed-mount", str(cluster.root), "--http-listen", http
    )
    cluster.start_agent("n1", gpus=1)
    return http


def upgrade(http: str, path: str, token: str, more: str = "") -> bytes:
    """The answer to an upgrade request for ``path`` that is refused (the server closes)."""
    host, _, port = http.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {http}\r\nAuthorization: Bearer {token}\r\n"
            f"Connection: Upgrade\r\nUpgrade: rota-tcp\r\n{more}\r\n".encode()
        )
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    return data


def forward_fetch(cluster: Cluster, job_id: str, env: dict[str, str] | None = None) -> None:
    """``rota forward`` to the job's httpd serves its page, twice (a forward per connection)."""
    port = free_port()
    forward = subprocess.Popen(
        [sys.executable, "-m", "rota.cli.rota_main", "forward", job_id, f"{port}:8080"],
        env={**cluster.env, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert forward.stdout is not None
        assert b"Forwarding 127.0.0.1:" in forward.stdout.readline()
        for _ in range(2):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=30) as r:
                assert r.read() == b"hello from inside the job\n"
    finally:
        forward.send_signal(signal.SIGINT)
        forward.wait(timeout=30)


def test_raw_forward_reaches_httpd_and_proxy_round_trips_10_mib(cluster: Cluster) -> None:
    start_cluster(cluster)
    job_id = start_servers(cluster)
    forward_fetch(cluster, job_id)
    assert cluster.log("scheduler").count(f"forward of job {job_id} port 8080") == 2
    assert "port 8080 on " in cluster.log("scheduler")
    assert "raw data connection" in cluster.log("scheduler")
    assert "relayed over the agent's stream" not in cluster.log("scheduler")
    data = os.urandom(10 << 20)  # through nc -e cat and back; stdin's end ends cat
    proxied = run_as(
        cluster, cluster.token, "rota.cli.rota_main", "proxy", job_id, "7000", data=data
    )
    assert proxied.returncode == 0, proxied.stderr
    assert len(proxied.stdout) == len(data) and proxied.stdout == data
    ways = [line for line in cluster.log("scheduler").splitlines() if "port 7000 on" in line]
    assert len(ways) == 1 and ways[0].endswith("raw data connection"), ways
    shown = cluster.cli("gcontrol", "show", "job", job_id, check=True).stdout
    assert shown.count("port forward by") == 3


def test_raw_forward_refuses_another_user_and_bad_tickets(cluster: Cluster) -> None:
    http = start_cluster(cluster)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    job_id = start_servers(cluster, {"ROTA_TOKEN": alice})
    theirs = run_as(cluster, bob, "rota.cli.rota_main", "proxy", job_id, "7000", data=b"x")
    assert theirs.returncode == 1
    assert b"belongs to alice; only its owner or an admin" in theirs.stderr
    assert theirs.stdout == b""
    head = upgrade(http, f"/api/v1/jobs/{job_id}/forward/7000", bob)
    assert head.startswith(b"HTTP/1.1 403 ")
    audit = cluster.cli("gadmin", "audit", check=True).stdout
    refused = [line for line in audit.splitlines() if "bob" in line]
    assert refused and "PERMISSION_DENIED" in " ".join(refused)
    assert "forward" in " ".join(refused)
    shown = cluster.cli("gcontrol", "show", "job", job_id, check=True).stdout
    assert "port forward by bob" not in shown
    bad = upgrade(http, f"/api/v1/jobs/{job_id}/forward/7000?node=-x", alice)
    assert bad.startswith(b"HTTP/1.1 400 ") and b"node" in bad
    bad = upgrade(http, f"/api/v1/jobs/{job_id}/forward/99999", alice)
    assert bad.startswith(b"HTTP/1.1 400 ") and b"port" in bad
    # a data connection needs a ticket the scheduler gave an agent for a forward it asked for
    forged = upgrade(http, "/api/v1/forward-dial", "", "Rota-Dial-Ticket: " + "A" * 32 + "\r\n")
    assert forged.startswith(b"HTTP/1.1 403 ")
    missing = upgrade(http, "/api/v1/forward-dial", "")
    assert missing.startswith(b"HTTP/1.1 403 ")
    assert "bad ticket" in cluster.log("scheduler")
    mine = run_as(cluster, alice, "rota.cli.rota_main", "proxy", job_id, "7000", data=b"ok\n")
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout == b"ok\n"


def test_forward_falls_back_when_the_http_port_is_off(cluster: Cluster) -> None:
    cluster.env_extra["ROTA_HTTP"] = f"127.0.0.1:{free_port()}"  # nobody listens there
    cluster.start_scheduler("--open-registration", "--allowed-mount", str(cluster.root))
    cluster.start_agent("n1", gpus=1)
    job_id = start_servers(cluster)
    forward_fetch(cluster, job_id)
    proxied = run_as(
        cluster, cluster.token, "rota.cli.rota_main", "proxy", job_id, "7000", data=b"x"
    )
    assert proxied.returncode == 0, proxied.stderr
    assert proxied.stdout == b"x"
    assert "raw data connection" not in cluster.log("scheduler")


def test_forward_is_relayed_over_the_stream_when_the_agent_cannot_dial_back(
    cluster: Cluster,
) -> None:
    start_cluster(cluster, "127.0.0.2")  # the agent dials 127.0.0.1 (its stream's host)
    job_id = start_servers(cluster)
    forward_fetch(cluster, job_id)
    data = os.urandom(1 << 20)
    proxied = run_as(
        cluster, cluster.token, "rota.cli.rota_main", "proxy", job_id, "7000", data=data
    )
    assert proxied.returncode == 0, proxied.stderr
    assert proxied.stdout == data
    log = cluster.log("scheduler")
    assert "relayed over the agent's stream" in log and "raw data connection" not in log
    wait_for(lambda: "no data connection" in cluster.log("agent-n1"), 60, what="agent log")
    assert cluster.log("agent-n1").count("no data connection") == 1  # not asked again


def test_raw_forward_over_tls(cluster: Cluster) -> None:
    certs = cluster.root / "tls"
    made = cluster.cli("rota", "certs", "init", "--dir", str(certs))
    assert made.returncode == 0, made.stderr
    http = f"127.0.0.1:{free_port()}"
    cluster.env_extra.update(ROTA_HTTP=http, ROTA_CA=str(certs / "ca.pem"))
    cluster.start_scheduler(
        "--open-registration",
        "--allowed-mount",
        str(cluster.root),
        "--http-listen",
        http,
        "--tls-cert",
        str(certs / "scheduler.pem"),
        "--tls-key",
        str(certs / "scheduler-key.pem"),
    )
    cluster.start_agent("n1", 1, "--ca", str(certs / "ca.pem"))
    job_id = start_servers(cluster)
    forward_fetch(cluster, job_id)
    log = cluster.log("scheduler")
    assert "raw data connection" in log and "relayed over the agent's stream" not in log
