"""Clients that never read their answers hold no slot of the HTTP port that others need (fifth
attack): bob asked for his long queue (``GET /api/v1/queue``, 5 MB) on every connection the
port allows and never read the answers; each connection waited for good to write its answer,
and a connection beyond the cap was closed at once: the dashboard, ``/metrics``, ``gsub`` and
``gqueue`` over HTTP were refused for everyone while bob kept them. Now a new connection
evicts the one whose client has been taking its answer the longest, as it evicts slow heads."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import yaml

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster, free_port, wait_for
from tests.support.fake_agent import FakeAgent
from tests.support.tokens import channel as token_channel

SLOTS = 16


def test_answers_nobody_reads_do_not_lock_the_http_port(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    http = free_port()
    settings = tmp_path / "scheduler.yaml"
    settings.write_text(yaml.safe_dump({"http_max_connections": SLOTS}))
    cluster.start_scheduler(
        "--open-registration", "--http-listen", f"127.0.0.1:{http}", "--config", str(settings)
    )
    bob = cluster.add_user("bob")
    agent = FakeAgent(cluster.address, "n1")
    channel = token_channel(cluster.address, bob)
    held: list[socket.socket] = []
    try:
        agent.start()
        spec = pb.JobSpec(
            image="img", command=["true"], resources=pb.Resources(gpus=8), array="0-9999"
        )
        request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)])
        pb_grpc.JobServiceStub(channel).SubmitJobs(request, timeout=120)
        queue = urllib.request.Request(
            f"http://127.0.0.1:{http}/api/v1/queue", headers={"Authorization": f"Bearer {bob}"}
        )
        with urllib.request.urlopen(queue, timeout=60) as reply:
            assert len(reply.read()) > 5_000_000  # far more than the sockets' buffers hold
        ask = f"GET /api/v1/queue HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {bob}\r\n\r\n"
        for _ in range(SLOTS):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
            sock.connect(("127.0.0.1", http))
            sock.sendall(ask.encode())
            held.append(sock)  # never read

        def answering(sock: socket.socket) -> bool:  # its answer began to arrive
            try:
                return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
            except BlockingIOError:
                return False

        wait_for(lambda: all(answering(s) for s in held), 60, what="every answer being written")

        def metrics() -> bool:  # refused while bob's answers are still being made, at most
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=30) as r:
                    return b"rota_scheduling_pass_seconds_count" in r.read()
            except OSError:
                return False

        wait_for(metrics, 60, what="/metrics answered while bob holds every connection")
    finally:
        for sock in held:
            sock.close()
        channel.close()
        agent.stop()
        cluster.stop()
