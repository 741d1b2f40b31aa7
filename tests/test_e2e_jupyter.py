"""Issue 25: ``grun --jupyter`` with a real JupyterLab (tests/jupyter_image.py builds the image
from this machine's Python and JupyterLab from the package registry), a real scheduler, agent
and container. The printed URL reaches JupyterLab through grun's forward: its REST API with
the token, its page, and a kernel started over REST that runs ``1+1`` over its WebSocket. The
same server answers on the jobs' web-port origin, reached from the dashboard's link with a
logged-in user's cookie (the page, the API, a kernel's WebSocket). Ctrl-C ends the session: CANCELLED in gqueue and gacct,
its container removed."""

from __future__ import annotations

import base64
import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for
from tests.jupyter_image import build_jupyter_image
from tests.test_e2e_web_terminal import cookie_of, grant_of, ticket_url

pytestmark = pytest.mark.docker


@pytest.fixture(scope="session")
def jupyter_image(test_image: str) -> str:
    return build_jupyter_image()


def ask(
    port: int, method: str, path: str, headers: dict[str, str], body: str = ""
) -> tuple[int, bytes]:
    """One HTTP request to 127.0.0.1:``port``: the status and the body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body or None, headers)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


class Socket:
    """A WebSocket client (RFC 6455), as much as Jupyter's kernel channels need."""

    def __init__(self, port: int, path: str, headers: dict[str, str]) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket"]
        lines += ["Connection: Upgrade", "Sec-WebSocket-Version: 13", f"Sec-WebSocket-Key: {key}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buffer = b""
        head = self._until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 "), head

    def _until(self, end: bytes) -> bytes:
        while end not in self.buffer:
            self._fill()
        head, _, self.buffer = self.buffer.partition(end)
        return head

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        assert data, "the WebSocket closed"
        self.buffer += data

    def _take(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._fill()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def send(self, text: str) -> None:
        data, mask = text.encode(), os.urandom(4)
        size = len(data)
        head = bytes([0x81]) + (
            bytes([0x80 | size]) if size < 126 else bytes([0x80 | 126]) + struct.pack("!H", size)
        )
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def receive(self) -> str:
        """The next text message (pings and other frames skipped)."""
        while True:
            first, second = self._take(2)
            size = second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", self._take(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", self._take(8))
            payload = self._take(size)
            if first & 0x0F == 0x1:
                return payload.decode()

    def close(self) -> None:
        self.sock.close()


def run_code(port: int, base: str, kernel: str, code: str, headers: dict[str, str]) -> str:
    """``code``'s result (text/plain) from ``kernel``, over its channels WebSocket."""
    ws = Socket(port, f"{base}api/kernels/{kernel}/channels", headers)
    try:
        msg_id = uuid.uuid4().hex
        ws.send(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "msg_type": "execute_request",
                        "session": uuid.uuid4().hex,
                        "username": "test",
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "channel": "shell",
                    "content": {"code": code, "silent": False, "store_history": False},
                }
            )
        )
        while True:
            message: dict[str, Any] = json.loads(ws.receive())
            mine = message.get("parent_header", {}).get("msg_id") == msg_id
            if mine and message["msg_type"] == "execute_result":
                return str(message["content"]["data"]["text/plain"])
            if mine and message["msg_type"] == "error":
                raise AssertionError(message["content"])
    finally:
        ws.close()


def check_lab(port: int, base: str, headers: dict[str, str]) -> None:
    """JupyterLab answers under ``base``: its status (JSON), its page, and a new kernel
    that computes ``1+1``."""
    status, body = ask(port, "GET", f"{base}api/status", headers)
    assert status == 200, body
    assert {"kernels", "started"} <= json.loads(body).keys()
    status, body = ask(port, "GET", f"{base}lab", headers)
    assert status == 200 and b"<title>JupyterLab</title>" in body, body[:300]
    status, body = ask(port, "POST", f"{base}api/kernels", headers, "{}")
    assert status == 201, body
    assert run_code(port, base, json.loads(body)["id"], "1+1", headers) == "2"


def test_grun_jupyter_serves_real_jupyterlab_forwarded_and_on_the_dashboard(
    cluster: Cluster, jupyter_image: str
) -> None:
    http_port = free_port()
    cluster.start_scheduler(
        "--open-registration",
        "--allowed-mount",
        str(cluster.root),
        "--http-listen",
        f"127.0.0.1:{http_port}",
    )
    cluster.start_agent("n1", gpus=1)
    grun = subprocess.Popen(
        [sys.executable, "-m", "rota.cli.grun", "--image", jupyter_image, "--jupyter"],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=cluster.root,
    )
    try:
        assert grun.stdout is not None
        line = grun.stdout.readline().decode()
        assert line.startswith("JupyterLab of job 1: http://127.0.0.1:"), (
            line + cluster.cli("glogs", "1").stdout
        )
        url = urlsplit(line.split(": ", 1)[1].strip())
        token = url.query.removeprefix("token=")
        assert len(token) == 48  # a random token
        assert url.path == "/jobs/1/app/8888/lab"
        base = "/jobs/1/app/8888/"
        assert url.port is not None
        check_lab(url.port, base, {"Authorization": f"token {token}"})
        status, _ = ask(url.port, "GET", f"{base}api/status", {})
        assert status == 403  # the token is required

        # The dashboard's link sends a login to the jobs' own origin with a ticket, which
        # becomes that origin's cookie for this job's port.
        grant = grant_of(ticket_url(http_port, f"{base}lab", cookie_of(http_port, cluster.token)))
        ports = cluster.ports_port
        browser = {"Cookie": grant, "Origin": f"http://127.0.0.1:{ports}"}
        check_lab(ports, base, {**browser, "Authorization": f"token {token}"})
        status, _ = ask(ports, "GET", f"{base}api/status", {"Origin": browser["Origin"]})
        assert status == 401  # the ports origin's grant is required too

        (job,) = cluster.jobs()
        assert (job["name"], job["interactive"], job["state"]) == ("jupyter", True, "RUNNING")
    finally:
        grun.send_signal(signal.SIGINT)
        assert grun.wait(timeout=30) == 130
    cluster.wait_state("1", "CANCELLED")
    assert grun.stderr is not None
    assert "cancelled job 1" in grun.stderr.read().decode()
    (ended,) = json.loads(cluster.cli("gacct", "-j", "1", "--json", check=True).stdout)
    assert ended["state"] == "CANCELLED"
    wait_for(lambda: not cluster.containers(), 30, what="the session's container removed")


def test_grun_jupyter_in_an_image_without_jupyter_says_so(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    grun = cluster.cli("grun", "--image", TEST_IMAGE, "--jupyter")
    assert grun.returncode == 1
    assert grun.stdout == ""
    assert "job 1 ended FAILED" in grun.stderr and "before JupyterLab answered" in grun.stderr
    assert "`glogs 1` shows its output (the image needs sh and JupyterLab)" in grun.stderr
    assert "jupyter: not found" in cluster.cli("glogs", "1", check=True).stdout
