"""Helpers of the fault tests: scheduler config files, a direct gRPC client for fast polling,
join tokens, and a private Docker engine that a test may stop and restart."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
import yaml

from tests.cluster import DOCKERFILE, TEST_IMAGE, Cluster, wait_for
from tests.support.tokens import channel

FAST = {"heartbeat_interval": 0.5, "tick_interval": 0.5, "node_timeout": 3, "node_grace": 30}


def config_file(cluster: Cluster, **values: Any) -> str:
    """A scheduler YAML config with the fast test timings, overridden by ``values``; jobs may
    bind-mount the cluster's directory."""
    path = cluster.root / f"sched-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump({**FAST, "allowed_mounts": [str(cluster.root)], **values}))
    return str(path)


def add_node(cluster: Cluster, short: str, *flags: str) -> str:
    """Register a node with ``gadmin node add`` and return its join token."""
    out = cluster.cli("gadmin", "node", "add", cluster.node_name(short), "--parsable", *flags)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def token_file(cluster: Cluster, token: str) -> str:
    """``--token-file`` and a file (mode 0600) holding ``token``."""
    path = cluster.root / f"token-{uuid.uuid4().hex[:8]}"
    path.write_text(token)
    path.chmod(0o600)
    return str(path)


def spawn_agent(cluster: Cluster, key: str, node: str, *extra: str) -> subprocess.Popen[bytes]:
    """Start an agent for node name ``node`` under its own process key (log ``key.log``),
    without waiting for it to connect (for agents that are meant to be refused)."""
    args = ["agent", "--scheduler", cluster.address, "--node", node, "--simulate-gpus", "1"]
    args += ["--data-dir", str(cluster.root / key), "--heartbeat", "0.5", *extra]
    return cluster.spawn(key, args)


def restart_scheduler(cluster: Cluster, *args: str) -> subprocess.Popen[bytes]:
    """Start the scheduler again on the same port and database; wait until it listens."""
    seen = cluster.log("scheduler").count("listening on")
    proc = cluster.start_scheduler(*args)
    wait_for(
        lambda: cluster.log("scheduler").count("listening on") > seen or proc.poll() is not None,
        30,
        what="scheduler restart",
    )
    assert proc.poll() is None, cluster.log("scheduler")[-3000:]
    return proc


class Api:
    """The scheduler's gRPC API straight from the test process (no CLI start-up per poll)."""

    def __init__(self, address: str, token: str) -> None:
        from rota.v1 import rota_pb2 as pb
        from rota.v1 import rota_pb2_grpc as pb_grpc

        self.pb = pb
        self.channel = channel(address, token)
        self.job_stub = pb_grpc.JobServiceStub(self.channel)
        self.node_stub = pb_grpc.NodeServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def jobs(self) -> list[Any]:
        """Every job (all states), or [] while the scheduler is unreachable."""
        out: list[Any] = []
        token = ""
        try:
            while True:
                reply = self.job_stub.ListJobs(
                    self.pb.ListJobsRequest(all_states=True, page_size=1000, page_token=token),
                    timeout=10,
                )
                out.extend(reply.jobs)
                token = reply.next_page_token
                if not token:
                    return out
        except grpc.RpcError:
            return []

    def events(self, job_id: str) -> list[Any]:
        return list(self.job_stub.GetJob(self.pb.GetJobRequest(id=job_id), timeout=10).events)

    def node(self, name: str) -> Any | None:
        try:
            return self.node_stub.GetNode(self.pb.GetNodeRequest(name=name), timeout=5)
        except grpc.RpcError:
            return None

    def state(self, job_id: str) -> str:
        job = self.job_stub.GetJob(self.pb.GetJobRequest(id=job_id), timeout=10)
        return str(self.pb.JobState.Name(job.state))


class PrivateDockerd:
    """A Docker engine of the test's own (socket, data root, exec root, pid file), so the test
    may stop and restart it without touching the shared engine. Runs with --bridge=none."""

    def __init__(self) -> None:
        # short paths: containerd's socket lives under the exec root (unix socket path limit)
        self.base = Path(tempfile.mkdtemp(prefix="rota-dk-", dir="/tmp"))
        self.sock = self.base / "d.sock"
        self.url = f"unix://{self.sock}"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, DOCKER_HOST=self.url)

    def start(self) -> None:
        log = (self.base / "dockerd.log").open("ab")
        self.proc = subprocess.Popen(
            [
                "dockerd",
                "-H",
                self.url,
                "--data-root",
                str(self.base / "data"),
                "--exec-root",
                str(self.base / "x"),
                "--pidfile",
                str(self.base / "dockerd.pid"),
                "--bridge=none",
                "--iptables=false",
                "--ip-masq=false",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(self.answers, 60, 0.2, what="private dockerd start")

    def answers(self) -> bool:
        result = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            env=self.env,
            capture_output=True,
            timeout=20,
        )
        return result.returncode == 0

    def stop(self) -> None:
        """SIGTERM and wait: the engine stops its containers and removes its socket."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def build_test_image(self) -> None:
        busybox = shutil.which("busybox")
        assert busybox, "busybox-static is needed for the test image"
        ctx = self.base / "ctx"
        ctx.mkdir(exist_ok=True)
        shutil.copy(busybox, ctx / "busybox")
        (ctx / "Dockerfile").write_text(DOCKERFILE)
        subprocess.run(
            ["docker", "build", "-q", "-t", TEST_IMAGE, str(ctx)],
            env=self.env,
            check=True,
            capture_output=True,
        )

    def cleanup(self) -> None:
        if self.proc is not None:
            subprocess.run(
                ["sh", "-c", "docker rm -f $(docker ps -aq) 2>/dev/null"],
                env=self.env,
                capture_output=True,
                timeout=60,
            )
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


def wait_gone(proc: subprocess.Popen[bytes], timeout: float = 30) -> int:
    """Wait for a process to exit and return its code."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is not None, "process did not exit"
    return int(proc.returncode)
