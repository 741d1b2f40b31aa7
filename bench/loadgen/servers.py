"""The servers under test, as subprocesses on 127.0.0.1: the real scheduler (``rota
scheduler`` on a fresh SQLite database) and the bare floor; and the admin and user calls the
run makes to the scheduler (bulk node registration, job submission)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
import yaml

from bench.loadgen import auth
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A server subprocess whose log is kept in ``log_path``; ``stop`` ends it (SIGTERM)."""

    def __init__(
        self,
        address: str,
        args: list[str],
        log_path: Path,
        ready: str,
        env: Mapping[str, str],
        metrics_url: str = "",
    ) -> None:
        self.address = address
        self.metrics_url = metrics_url  # the scheduler's /metrics ("" for the floor)
        self.log_path = log_path
        # Each server raises its own open-file limit: a preexec_fn would fork this gRPC-using
        # process, and such a fork can crash before exec (grpc/grpc#43055).
        with log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(env),
                cwd=REPO,
            )
        self._ready = ready

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self._ready not in self.log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.log_path.name} did not start:\n{self.log()[-3000:]}")
            await asyncio.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def client_env(root: Path, address: str, token: str = "") -> dict[str, str]:
    """The environment of every rota process the run starts: its own XDG directories, and the
    user token its commands send (``ROTA_TOKEN``)."""
    env = dict(os.environ)
    env.update(
        XDG_DATA_HOME=str(root / "data"),
        XDG_CONFIG_HOME=str(root / "config"),
        ROTA_SCHEDULER=address,
        PYTHONUNBUFFERED="1",
    )
    if token:
        env["ROTA_TOKEN"] = token
    return env


def start_scheduler(root: Path, settings: Mapping[str, Any]) -> Server:
    """``rota scheduler`` with a new SQLite database in ``root`` and ``settings`` as its YAML;
    its HTTP port (/metrics) on a free port unless ``settings`` name one."""
    values = {"http_listen": f"127.0.0.1:{free_port()}", **settings}
    config = root / "scheduler.yaml"
    config.write_text(yaml.safe_dump({"scheduler": values}))
    address = f"127.0.0.1:{free_port()}"
    args = [
        "-m",
        "rota.cli.rota_main",
        "scheduler",
        "--listen",
        address,
        "--db",
        f"sqlite:///{root / 'scheduler.db'}",
        "--config",
        str(config),
    ]
    env = client_env(root, address)
    metrics = f"http://{values['http_listen']}/metrics" if values["http_listen"] else ""
    return Server(address, args, root / "scheduler.log", "listening on", env, metrics)


def scrape(metrics_url: str, name: str) -> float | None:
    """The value of the unlabelled sample ``name`` on ``metrics_url``; None when absent or
    unreachable."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=30) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return float(value)
    return None


def start_floor(root: Path, welcome: bytes, pong: bytes) -> Server:
    """The bare floor server (bench/loadgen/floor.py) answering with ``welcome`` and ``pong``."""
    address = f"127.0.0.1:{free_port()}"
    args = [
        "-m",
        "bench.loadgen.floor",
        "--listen",
        address,
        "--welcome",
        welcome.hex(),
        "--pong",
        pong.hex(),
    ]
    return Server(address, args, root / "floor.log", "floor listening on", os.environ)


async def register(
    address: str, token: str, names: list[str], parallel: int = 64
) -> dict[str, str]:
    """AddNode for every name, ``parallel`` calls in flight; a name already registered gets a
    new token. Returns name -> join token."""
    tokens: dict[str, str] = {}
    gate = asyncio.Semaphore(parallel)
    async with auth.channel(address, token) as channel:
        admin = pb_grpc.AdminServiceStub(channel)

        async def add(name: str) -> None:
            async with gate:
                request = pb.AddNodeRequest(name=name, user="loadgen")
                try:
                    reply = await admin.AddNode(request, timeout=60)
                except grpc.aio.AioRpcError as exc:
                    if exc.code() != grpc.StatusCode.ALREADY_EXISTS:
                        raise
                    request.rotate_token = True
                    reply = await admin.AddNode(request, timeout=60)
                tokens[name] = reply.token

        await asyncio.gather(*(add(n) for n in names))
    return tokens


def job_spec(runtime: float, hold: bool = False) -> pb.JobSpec:
    """One GPU, a sleep as long as the simulated nodes run it (they never run the command)."""
    return pb.JobSpec(
        name="loadgen",
        image="loadgen/sleep:latest",
        command=["sleep", f"{runtime:g}"],
        resources=pb.Resources(gpus=1),
        time_limit=max(3600.0, runtime * 10),
        hold=hold,
    )


async def submit(
    jobs: pb_grpc.JobServiceStub, count: int, runtime: float, batch: int, hold: bool = False
) -> list[str]:
    """Submit ``count`` jobs, ``batch`` per SubmitJobs call, one call after the other."""
    ids: list[str] = []
    for start in range(0, count, batch):
        items = [
            pb.SubmitItem(client_request_id=uuid.uuid4().hex, spec=job_spec(runtime, hold))
            for _ in range(min(batch, count - start))
        ]
        reply = await jobs.SubmitJobs(
            pb.SubmitJobsRequest(items=items, user="loadgen"), timeout=120
        )
        ids.extend(i for j in reply.jobs for i in j.job_ids)
    return ids
