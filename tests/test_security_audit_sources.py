"""Refusals of unauthenticated requests are capped per host, not per address (seventh attack):
the audit log kept ``audit_refusals_per_minute`` refusals per peer address and minute, and a
local user without any rota token, on the machine the scheduler listens on (its loopback, the
default), sent requests with a made-up token from 127.0.0.2, 127.0.0.3, ... (every address of
127.0.0.0/8 is this machine's): each address got its own quota, so the audit table grew by a
row per request, as fast as he could send them. Now every loopback address is one peer host,
and so is each IPv6 /64 (a network's hosts pick their own addresses in it)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.cluster import Cluster, free_port

SOURCES = 200


def _refused(http: int, source: str) -> bytes:
    """A request with a made-up token, sent from ``source``: the answer's status line."""
    with socket.socket() as sock:
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", http))
        sock.sendall(
            b"GET /api/v1/queue HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer made-up\r\n\r\n"
        )
        return sock.recv(64).split(b"\r\n", 1)[0]


def test_refusals_from_many_loopback_addresses_are_capped_as_one_host(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    http = free_port()
    cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}")
    try:
        for i in range(SOURCES):
            source = f"127.0.{1 + i // 250}.{1 + i % 250}"
            assert _refused(http, source) == b"HTTP/1.1 401 Unauthorized"
        listed = cluster.cli("gadmin", "audit", "--limit", "10000", "--json", check=True)
        entries = json.loads(listed.stdout)
        refusals = [e for e in entries if e["action"] == "web GET /api/v1/queue"]
        summaries = [e for e in entries if e["action"] == "audit"]
        assert len(refusals) == 20, len(refusals)  # audit_refusals_per_minute
        assert len(summaries) == 1 and "127.0.0.0/8" in summaries[0]["peer"]
    finally:
        cluster.stop()


def test_the_hosts_followed_are_bounded_and_forgotten_in_constant_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Beyond ``MAX_PEERS`` hosts, each new one looked at every host followed for one whose
    minute was over, and forgot none while all were in their minute: the hosts followed grew
    without end, each new one costing a look at all of them, on the core thread. Now the host
    whose minute began first is forgotten."""
    from rota.scheduler.cluster.users import AuditEntry
    from rota.scheduler.core import audit
    from rota.scheduler.core.audit import RefusalLimiter

    monkeypatch.setattr(audit, "MAX_PEERS", 100)
    limiter = RefusalLimiter(per_minute=20)
    for i in range(2000):
        peer = f"ipv4:10.0.{i // 250}.{i % 250}:4000"
        entry = AuditEntry(1000.0, "", "JobService/ListJobs", "", peer, False, "no token")
        assert limiter.admit(entry) == entry
    assert len(limiter._windows) == 100
    assert audit.peer_host("ipv6:[2001:db8:1:2:3:4:5:6]:443") == "ipv6:[2001:db8:1:2::]/64"
    assert audit.peer_host("ipv6:[::ffff:127.0.0.9]:5") == audit.LOOPBACK
