"""Measurements taken beside the load: a process's CPU and memory, unary RPC latency, the
``ginfo`` command's whole-process time, and how long stopped nodes take to be marked DOWN."""

from __future__ import annotations

import asyncio
import compileall
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from bench.loadgen import auth
from bench.loadgen.procfs import cpu_seconds, rss_bytes
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc


def quantiles(values: list[float]) -> dict[str, Any]:
    """n, p50, p99 and max of ``values`` (seconds) in milliseconds; None when empty."""
    if not values:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)

    return {"n": len(ordered), "p50_ms": at(0.5), "p99_ms": at(0.99), "max_ms": at(1.0)}


@dataclass
class ProcessMeter:
    """CPU between ``begin`` and ``end`` and RSS sampled every second between them."""

    pid: int
    cpu_begin: float = 0.0
    wall_begin: float = 0.0
    rss: list[int] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None

    def begin(self) -> None:
        self.cpu_begin, self.wall_begin = cpu_seconds(self.pid), time.monotonic()
        self._task = asyncio.create_task(self._sample())

    async def _sample(self) -> None:
        while True:
            self.rss.append(rss_bytes(self.pid))
            await asyncio.sleep(1.0)

    def end(self) -> dict[str, Any]:
        if self._task is not None:
            self._task.cancel()
        self.rss.append(rss_bytes(self.pid))
        wall = time.monotonic() - self.wall_begin
        self.result = {
            "cpu_percent": round(100 * (cpu_seconds(self.pid) - self.cpu_begin) / wall, 1),
            "rss_mean_mib": round(sum(self.rss) / len(self.rss) / 2**20, 1),
            "rss_max_mib": round(max(self.rss) / 2**20, 1),
        }
        return self.result


class UnaryProbes:
    """Calls ListNodes, GetJob and ListJobs (one job by id) one after the other, every
    ``interval`` seconds, on their own channel, and keeps each call's latency and when it
    began (seconds since ``run`` started), so a report can say when the slowest happened."""

    def __init__(self, address: str, token: str, job_id: str, interval: float) -> None:
        self.address = address
        self.token = token
        self.job_id = job_id
        self.interval = interval
        self.latency: dict[str, list[float]] = {"ListNodes": [], "GetJob": [], "ListJobs": []}
        self.began: dict[str, list[float]] = {name: [] for name in self.latency}
        self.errors: dict[str, int] = dict.fromkeys(self.latency, 0)
        self.list_nodes_bytes = 0

    async def run(self) -> None:
        async with auth.channel(
            self.address, self.token, options=[("grpc.max_receive_message_length", 256 * 2**20)]
        ) as channel:
            nodes = pb_grpc.NodeServiceStub(channel)
            jobs = pb_grpc.JobServiceStub(channel)
            calls: dict[str, Callable[[], Awaitable[Any]]] = {
                "ListNodes": lambda: nodes.ListNodes(pb.ListNodesRequest(), timeout=30),
                "GetJob": lambda: jobs.GetJob(pb.GetJobRequest(id=self.job_id), timeout=30),
                "ListJobs": lambda: jobs.ListJobs(
                    pb.ListJobsRequest(ids=[self.job_id], all_states=True), timeout=30
                ),
            }
            started = time.monotonic()
            while True:
                began = time.monotonic()
                for name, call in calls.items():
                    t0 = time.monotonic()
                    try:
                        reply = await call()
                    except grpc.aio.AioRpcError:
                        self.errors[name] += 1
                        continue
                    self.latency[name].append(time.monotonic() - t0)
                    self.began[name].append(t0 - started)
                    if name == "ListNodes":
                        self.list_nodes_bytes = reply.ByteSize()
                await asyncio.sleep(max(0.0, self.interval - (time.monotonic() - began)))

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            name: {**quantiles(v), "errors": self.errors[name], "slowest": self._slowest(name)}
            for name, v in self.latency.items()
        }
        out["ListNodes"]["reply_mib"] = round(self.list_nodes_bytes / 2**20, 2)
        return out

    def _slowest(self, name: str, count: int = 3) -> list[tuple[float, float]]:
        """The ``count`` slowest calls as (seconds into the run when it began, milliseconds)."""
        calls = sorted(zip(self.latency[name], self.began[name], strict=True), reverse=True)[:count]
        return [(round(at, 1), round(1000 * took, 1)) for took, at in calls]


def byte_compile(repo: Path) -> None:
    """Byte-compile rota's client-side modules as installing a package does, so that ``ginfo``
    is timed starting, not compiling its sources (which it would do on every run in a fresh
    checkout, or wherever PYTHONDONTWRITEBYTECODE is set)."""
    for folder in ("common", "cli", "proto/rota"):
        compileall.compile_dir(repo / folder, quiet=1)


async def time_ginfo(env: Mapping[str, str]) -> float | None:
    """Whole-process seconds of ``ginfo`` (start-up, imports, the RPC, the table); None if it
    failed."""
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rota.cli.ginfo",
        env=dict(env),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    code = await proc.wait()
    return time.monotonic() - t0 if code == 0 else None


async def watch_down(
    address: str, token: str, names: list[str], deadline: float
) -> dict[str, float]:
    """Seconds from now until each node shows DOWN: every half second, GetNode for each node not
    yet DOWN, all in flight at once (so one slow reply delays no other node's reading)."""
    began = time.monotonic()
    down: dict[str, float] = {}
    async with auth.channel(address, token) as channel:
        nodes = pb_grpc.NodeServiceStub(channel)

        async def check(name: str) -> None:
            try:
                node = await nodes.GetNode(pb.GetNodeRequest(name=name), timeout=10)
            except grpc.aio.AioRpcError:
                return
            if node.state == "DOWN":
                down.setdefault(name, time.monotonic() - began)

        while len(down) < len(names) and time.monotonic() < deadline:
            round_began = time.monotonic()
            await asyncio.gather(*(check(n) for n in names if n not in down))
            await asyncio.sleep(max(0.0, 0.5 - (time.monotonic() - round_began)))
    return down
