"""Attacks on issue 25's raw forward path with real processes (docs/security.md, "Raw
forwards, in-job requeue and constraints"): one user's burst of forwards, bytes pipelined
after the upgrade with a half-close, and a job port slow to accept must not take the HTTP
port's connections, slots or the node's raw path from the others."""

from __future__ import annotations

import socket
import subprocess
import sys

from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for
from tests.test_e2e_attach_forward import run_as, start_servers


def ask_forward(http: int, job_id: str, token: str) -> socket.socket:
    """A forward upgrade to the job's port 8080, sent and left open (nothing read yet)."""
    sock = socket.create_connection(("127.0.0.1", http), timeout=60)
    sock.sendall(
        f"GET /api/v1/jobs/{job_id}/forward/8080 HTTP/1.1\r\nHost: 127.0.0.1:{http}\r\n"
        f"Authorization: Bearer {token}\r\nConnection: Upgrade\r\nUpgrade: rota-tcp\r\n\r\n".encode()
    )
    return sock


def test_one_users_burst_of_forwards_leaves_others_theirs(cluster: Cluster) -> None:
    """bob asks for eight forwards to his own job at once and sends nothing on them. Beyond
    his share (16 // 8 = 2) he is refused 503 before the node is asked anything: no data
    connection of his waits on the port for a client that was refused, and alice's forward
    still switches (101) at once."""
    http = free_port()
    settings = cluster.root / "scheduler.yaml"
    settings.write_text(
        f"http_listen: 127.0.0.1:{http}\nhttp_max_connections: 16\nopen_registration: true\n"
        f"allowed_mounts: [{cluster.root}]\n"
    )
    cluster.start_scheduler("--config", str(settings))
    cluster.start_agent("n1", gpus=1)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    hers = start_servers(cluster, {"ROTA_TOKEN": alice})
    his = start_servers(cluster, {"ROTA_TOKEN": bob})
    burst = [ask_forward(http, his, bob) for _ in range(8)]
    try:
        heads = [conn.recv(4096) for conn in burst]
        switched = [h for h in heads if h.startswith(b"HTTP/1.1 101 ")]
        refused = [h for h in heads if h.startswith(b"HTTP/1.1 503 ")]
        assert len(switched) == 2 and len(refused) == 6, heads
        assert all(b"close some" in h for h in refused), refused
        mine = ask_forward(http, hers, alice)
        try:
            assert mine.recv(4096).startswith(b"HTTP/1.1 101 ")
        finally:
            mine.close()
        shown = cluster.cli("gcontrol", "show", "job", his, check=True).stdout
        assert shown.count("port forward by bob") == 2
    finally:
        for conn in burst:
            conn.close()


def test_bytes_pipelined_after_the_upgrade_and_half_closes_free_their_slots(
    cluster: Cluster,
) -> None:
    """A client that sends its first bytes in the same packet as the upgrade request and
    half-closes at once gets the port's whole answer; each such forward gives its slot back
    when the port's side ends, so more of them than the user's share, one after another,
    are all switched."""
    http = free_port()
    settings = cluster.root / "scheduler.yaml"
    settings.write_text(
        f"http_listen: 127.0.0.1:{http}\nhttp_max_connections: 16\nopen_registration: true\n"
        f"allowed_mounts: [{cluster.root}]\n"
    )
    cluster.start_scheduler("--config", str(settings))
    cluster.start_agent("n1", gpus=1)
    bob = cluster.add_user("bob")
    his = start_servers(cluster, {"ROTA_TOKEN": bob})
    for _ in range(5):  # his share is 2
        with socket.create_connection(("127.0.0.1", http), timeout=60) as sock:
            sock.sendall(
                f"GET /api/v1/jobs/{his}/forward/8080 HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: Bearer {bob}\r\nConnection: Upgrade\r\nUpgrade: rota-tcp\r\n"
                "\r\nGET /index.html HTTP/1.0\r\n\r\n".encode()
            )
            sock.shutdown(socket.SHUT_WR)
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 101 "), data[:200]
        assert data.endswith(b"hello from inside the job\n"), data[-200:]


STUCK = f"""
name: stuck
image: {TEST_IMAGE}
command: ["sh", "-c", "nc -ll -p 9000 -e cat & until grep -qE ':2328 0+:0000 0A' /proc/net/tcp /proc/net/tcp6; do sleep 0.1; done; kill -STOP $!; for i in 1 2 3 4 5 6 7 8; do nc 127.0.0.1 9000 & done; sleep 600"]
"""
FULL = ["grep", "-q", "0100007F:2328 02 ", "/proc/net/tcp"]  # a connection to 9000 unanswered


def test_a_port_slow_to_accept_keeps_others_forwards_raw(cluster: Cluster) -> None:
    """bob's job listens on a port and never accepts (its accept queue full): opening it takes
    the node longer than the scheduler waits for the data connection. His forward is relayed
    over the node's stream, but the node is not taken for one that cannot dial back: alice's
    forward on it afterwards still takes the raw data connection."""
    from tests.test_e2e_raw_forward import start_cluster

    start_cluster(cluster)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    hers = start_servers(cluster, {"ROTA_TOKEN": alice})
    path = cluster.write_job("stuck.yaml", STUCK)
    his_id = run_as(cluster, bob, "rota.cli.gsub", "--parsable", str(path)).stdout.decode().strip()
    cluster.wait_state(his_id, "RUNNING")
    wait_for(  # the listener, stopped once it listened, has its queue full
        lambda: run_as(cluster, bob, "rota.cli.gattach", his_id, *FULL).returncode == 0,
        60,
        interval=0.5,
        what="port 9000's queue full",
    )
    stuck = subprocess.Popen(
        [sys.executable, "-m", "rota.cli.rota_main", "proxy", his_id, "9000"],
        env={**cluster.env, "ROTA_TOKEN": bob},
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(
            lambda: (
                f"port 9000 on {cluster.node_name('n1')} by bob: relayed"
                in cluster.log("scheduler")
            ),
            what="bob's forward relayed once no data connection came",
        )
        mine = run_as(cluster, alice, "rota.cli.rota_main", "proxy", hers, "7000", data=b"ok\n")
    finally:
        stuck.kill()
        stuck.wait(timeout=30)
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout == b"ok\n"
    ways = [line for line in cluster.log("scheduler").splitlines() if "port 7000 on" in line]
    assert len(ways) == 1 and ways[0].endswith("raw data connection"), ways
