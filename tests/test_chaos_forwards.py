"""Raw forwards through a scheduler ``kill -9`` (issue: no leak, no stall), with real
processes and Docker. ``rota forward`` holds forwarded connections open through the
scheduler's HTTP port (the agent's data connections dialled back to it), to a port that
echoes and to one whose program never reads nor closes; the scheduler is killed and started
again on the same port. The agent's descriptors and threads come back to what they were
before the forwards (nothing left for connections whose scheduler died), and a connection
opened through the same ``rota forward`` after the restart reaches the job again."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for
from tests.faults_support import restart_scheduler

pytestmark = pytest.mark.docker

SERVERS = f"""
name: ports
image: {TEST_IMAGE}
command: ["sh", "-c", "nc -ll -p 7001 -e sleep 100000 & exec nc -ll -p 7000 -e cat"]
"""
HELD = 12  # connections held open when the scheduler dies


def _counts(pid: int) -> tuple[int, int]:
    """(open descriptors, threads) of process ``pid``."""
    return len(os.listdir(f"/proc/{pid}/fd")), len(os.listdir(f"/proc/{pid}/task"))


def _echo(port: int) -> socket.socket:
    """A connection through the forward on ``port`` to the job's echo, checked."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    sock.sendall(b"ping\n")
    assert sock.recv(16) == b"ping\n"
    return sock


def test_broken_raw_forwards_leave_nothing_in_the_agent(cluster: Cluster) -> None:
    http = f"127.0.0.1:{free_port()}"
    cluster.env_extra["ROTA_HTTP"] = http
    args = ("--open-registration", "--http-listen", http)
    cluster.start_scheduler(*args)
    agent = cluster.start_agent("n1", gpus=0)
    job_id = cluster.submit(SERVERS)
    cluster.wait_state(job_id, "RUNNING")
    echo, silent = free_port(), free_port()
    forwards = [
        subprocess.Popen(
            [sys.executable, "-m", "rota.cli.rota_main", "forward", job_id, f"{local}:{remote}"],
            env=cluster.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        for local, remote in ((echo, 7000), (silent, 7001))
    ]
    try:
        for forward in forwards:
            assert forward.stdout is not None
            assert b"Forwarding 127.0.0.1:" in forward.stdout.readline()
        _echo(echo).close()
        wait_for(lambda: "raw data connection" in cluster.log("agent-n1"), 60, what="raw path")
        before = wait_for(lambda: _settled(agent.pid), 60, what="the agent settled")

        held = [_echo(echo) for _ in range(HELD // 2)]
        held += [socket.create_connection(("127.0.0.1", silent)) for _ in range(HELD // 2)]
        wait_for(
            lambda: cluster.log("agent-n1").count("raw data connection") > HELD,
            30,
            what="every forward's data connection",
        )
        during = _counts(agent.pid)
        assert during[0] > before[0] + HELD, (before, during)

        cluster.kill("scheduler")
        restart_scheduler(cluster, *args)
        wait_for(
            lambda: _counts(agent.pid)[0] <= before[0] and _counts(agent.pid)[1] <= before[1],
            20,
            what=f"the agent's descriptors and threads back to {before} (were {during})",
        )
        wait_for(lambda: cluster.node(cluster.node_name("n1"))["state"] != "DOWN", 20)
        again = _echo(echo)  # a connection after the restart, through the same rota forward
        again.close()
        for sock in held:
            sock.close()
    finally:
        for forward in forwards:
            forward.send_signal(signal.SIGINT)
            forward.wait(timeout=30)


def _settled(pid: int) -> tuple[int, int] | None:
    """The process's counts once two looks a second apart agree."""
    first = _counts(pid)
    time.sleep(1)
    return first if _counts(pid) == first else None
