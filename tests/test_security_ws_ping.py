"""A terminal's pings cannot grow the scheduler (seventh attack): the WebSocket server answered
each ping with a pong written without waiting for the connection to take it, so bob, who opened
the terminal of his own running job (``GET /api/v1/jobs/ID/terminal`` with his token), sent pings of 64 KiB as fast as he could and read nothing: every
pong stayed queued in the scheduler, 64 KiB each, for as long as he kept sending. Now a ping
carries at most 125 bytes (RFC 6455's bound of a control frame; a longer one closes the socket
with 1002) and the next frame is read only once the pong was taken."""

from __future__ import annotations

import base64
import os
import socket
import struct

import pytest

from tests.cluster import TEST_IMAGE, Cluster, free_port

PING, PONG, CLOSE = 0x9, 0xA, 0x8


def _rss(pid: int) -> int:
    """Resident bytes of process ``pid``."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def _frame(opcode: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    size = len(payload)
    head = struct.pack("!B", 0x80 | opcode)
    if size < 126:
        head += struct.pack("!B", 0x80 | size)
    else:
        head += struct.pack("!BH", 0x80 | 126, size)
    whole = (mask * (size // 4 + 1))[:size]
    body = (int.from_bytes(payload, "big") ^ int.from_bytes(whole, "big")).to_bytes(size, "big")
    return head + mask + body


def _terminal(http: int, token: str, job: str) -> socket.socket:
    """A WebSocket of ``job``'s terminal, opened with ``token``; its receive buffer small."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", http))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /api/v1/jobs/{job}/terminal HTTP/1.1\r\nHost: 127.0.0.1:{http}\r\n"
            f"Authorization: Bearer {token}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101 "), head
    return sock


JOB = f"""#!/bin/sh
#ROTA image={TEST_IMAGE}
sleep 600
"""


@pytest.mark.docker
def test_pings_whose_pongs_nobody_reads_do_not_grow_the_scheduler(cluster: Cluster) -> None:
    http = free_port()
    scheduler = cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}")
    cluster.start_agent("n1", gpus=1)
    job = cluster.cli(
        "gsub", "--parsable", str(cluster.write_job("sleep.sh", JOB)), check=True
    ).stdout.strip()
    cluster.wait_state(job, "RUNNING", timeout=120)
    before = _rss(scheduler.pid)
    for size, count in ((65_000, 2_000), (125, 500_000)):  # 130 MB, then 66 MB of pings
        flood = _terminal(http, cluster.token, job)
        flood.settimeout(10)
        pings = _frame(PING, b"p" * size) * max(1, 100_000 // size)
        sent = 0
        try:
            while sent < count * size:  # not one pong read
                flood.sendall(pings)
                sent += len(pings)
        except (TimeoutError, ConnectionError):
            pass  # the scheduler stopped reading them, or closed the socket
        grown = _rss(scheduler.pid) - before
        assert grown < 32 << 20, f"the scheduler grew by {grown >> 20} MiB ({sent} bytes)"
        flood.close()
    # a ping within RFC 6455's bound is answered with its payload
    fresh = _terminal(http, cluster.token, job)
    fresh.settimeout(30)
    fresh.sendall(_frame(PING, b"hello"))
    answer = b""
    while bytes([0x80 | PONG, 5]) + b"hello" not in answer:
        chunk = fresh.recv(4096)
        assert chunk, "the socket closed before the pong"
        answer += chunk
    fresh.close()
