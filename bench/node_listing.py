"""Benchmark: node listings with many nodes (issue 14 item 4), without as many connections.

Run from the repository root:  python bench/node_listing.py [NODES] [RUNS]   (defaults 10000, 5)

Builds the scheduler's services in-process (SQLite in a temporary folder, the engine, the gRPC
servicers on 127.0.0.1) and admits NODES 8-GPU nodes through the engine's own hello and
heartbeat steps, with the inventory and telemetry the load generator's nodes send
(bench/loadgen/protocol.py); no agent streams are open, so the listing is measured alone. Then,
RUNS times each: one ``ListNodes`` page (default size and the largest), the summary alone,
``GetNode``; and the whole process of ``ginfo`` (the summary at this size), ``ginfo -s``,
``ginfo -t DOWN`` (ten nodes are DOWN), ``ginfo -N NODE`` and ``ginfo --all``, with rota's
modules byte-compiled first as an installation has them. Prints
medians and maxima, and the largest reply in bytes (gRPC's default limit is 4 MiB).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.loadgen import protocol
from bench.loadgen.probes import byte_compile
from rota.scheduler.api import convert
from rota.scheduler.api.servicers import add_servicers
from rota.scheduler.config import SchedulerConfig, policy_config
from rota.scheduler.core.nodes import MAX_NODE_PAGE
from rota.scheduler.core.services import build_services
from rota.scheduler.engine import Engine
from rota.scheduler.policy import make_policy
from rota.scheduler.store.store import Store
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc

FOUR_MIB = 4 * 2**20


def admit(engine: Engine, count: int) -> None:
    """``count`` nodes say hello and send one heartbeat each (core-thread steps, in order)."""
    for i in range(count):
        name = f"sim-{i:05d}"
        hello = convert.hello_from_pb(protocol.hello(name, "", []).hello)
        engine.steps.hello(hello, i + 1)
        uuids = [protocol.gpu_uuid(name, g) for g in range(protocol.GPUS_PER_NODE)]
        beat = convert.heartbeat_from_pb(protocol.heartbeat(uuids, []).heartbeat)
        engine.steps.heartbeat(name, i + 1, beat)


def serve(engine: Engine, ready: threading.Event, port: list[int], stop: threading.Event) -> None:
    async def main() -> None:
        server = grpc.aio.server()
        add_servicers(server, engine)
        port.append(server.add_insecure_port("127.0.0.1:0"))
        await server.start()
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await server.stop(0)

    asyncio.run(main())


def timed(fn: Callable[[], object], runs: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(runs):
        began = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - began)
    return times, result


def line(label: str, times: list[float], extra: str = "") -> None:
    median, worst = statistics.median(times) * 1000, max(times) * 1000
    print(f"{label:<44} median {median:7.0f} ms  max {worst:7.0f} ms  {extra}", flush=True)


def main(count: int, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="rota-listing-") as tmp:
        config = SchedulerConfig(open_registration=True, node_timeout=3600.0)
        policy = make_policy("first-fit", policy_config(config))
        services = build_services(Store(f"sqlite:///{tmp}/db"), config, time.time, policy)
        engine = Engine(services)
        began = time.perf_counter()
        admit(engine, count)
        for i in range(0, count, max(1, count // 10)):  # ten nodes DOWN for ``ginfo -t DOWN``
            services.model.nodes[f"sim-{i:05d}"].connected = False
        print(f"{count} nodes admitted in {time.perf_counter() - began:.1f} s", flush=True)
        ready, stop, port = threading.Event(), threading.Event(), []
        thread = threading.Thread(target=serve, args=(engine, ready, port, stop), daemon=True)
        thread.start()
        ready.wait()
        address = f"127.0.0.1:{port[0]}"
        sizes: list[int] = []
        try:
            with grpc.insecure_channel(address) as channel:
                stub = pb_grpc.NodeServiceStub(channel)

                def ask(request: pb.ListNodesRequest) -> object:
                    reply = stub.ListNodes(request, timeout=60)
                    sizes.append(reply.ByteSize())
                    return reply

                times, _ = timed(lambda: ask(pb.ListNodesRequest()), runs)
                line("ListNodes, first page (default size)", times, f"{sizes[-1]:,} bytes")
                last = f"sim-{count // 2:05d}"
                request = pb.ListNodesRequest(page_size=MAX_NODE_PAGE, page_token=last)
                times, _ = timed(lambda: ask(request), runs)
                line(f"ListNodes, a page of {MAX_NODE_PAGE}", times, f"{sizes[-1]:,} bytes")
                times, _ = timed(lambda: ask(pb.ListNodesRequest(summary_only=True)), runs)
                line("ListNodes, summary only", times, f"{sizes[-1]:,} bytes")
                get = pb.GetNodeRequest(name=last)
                times, _ = timed(lambda: stub.GetNode(get, timeout=60), runs)
                line("GetNode", times)
            byte_compile(Path(__file__).resolve().parents[1])
            env = {**os.environ, "ROTA_SCHEDULER": address}
            cli = [sys.executable, "-m", "rota.cli.ginfo", "--scheduler", address]
            commands = (
                ("ginfo (the summary above 500 nodes)", []),
                ("ginfo -s", ["-s"]),
                ("ginfo -t DOWN", ["-t", "DOWN"]),
                ("ginfo -N", ["-N", last]),
                ("ginfo --all", ["--all"]),
            )
            for label, extra in commands:
                out: list[int] = []

                def run(extra: list[str] = extra, out: list[int] = out) -> None:
                    done = subprocess.run(cli + extra, env=env, capture_output=True, check=True)
                    out.append(len(done.stdout.splitlines()))

                times, _ = timed(run, runs)
                line(f"{label} whole process", times, f"{out[-1]} lines")
            print(f"largest reply {max(sizes):,} bytes (limit {FOUR_MIB:,})")
        finally:
            stop.set()
            thread.join()
            asyncio.run(engine.stop())


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 10_000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 5,
    )
