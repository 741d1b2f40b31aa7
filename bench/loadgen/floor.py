"""The floor: a bare grpc.aio server that receives the agents' stream and answers with canned
bytes, so the load generator can compare the scheduler with the least any grpc.aio server
spends on the same connections and messages.

It never parses a message: the first one on a stream (the hello) gets a serialized welcome,
every later one a serialized pong. The unary calls the load generator's probes make (ListNodes,
GetJob, ListJobs) get empty bytes, an empty reply: their latency is the least any grpc.aio server
on this machine answers a call in beside the same streams. Its server options are the
scheduler's (scheduler/daemon.py). It imports only grpc, so its memory is grpc's and the
connections'.

Run: python -m bench.loadgen.floor --listen 127.0.0.1:PORT --welcome HEX --pong HEX
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc

METHOD = "/rota.v1.AgentService/Connect"
SERVER_OPTIONS = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.max_receive_message_length", 64 * 2**20),
    ("grpc.max_send_message_length", 64 * 2**20),
    ("grpc.server.max_pending_requests", 20_000),
    ("grpc.server.max_pending_requests_hard_limit", 40_000),
]
UNARY = {"rota.v1.NodeService": ("ListNodes",), "rota.v1.JobService": ("GetJob", "ListJobs")}


def handlers(welcome: bytes, pong: bytes) -> list[grpc.GenericRpcHandler]:
    async def connect(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        reply = welcome
        async for _ in requests:
            yield reply
            reply = pong

    async def empty(request: bytes, context: Any) -> bytes:
        return b""

    stream = grpc.method_handlers_generic_handler(
        "rota.v1.AgentService",
        {"Connect": grpc.stream_stream_rpc_method_handler(connect)},
    )
    unary = [
        grpc.method_handlers_generic_handler(
            service, {m: grpc.unary_unary_rpc_method_handler(empty) for m in methods}
        )
        for service, methods in UNARY.items()
    ]
    return [stream, *unary]


async def serve(listen: str, welcome: bytes, pong: bytes) -> None:
    server = grpc.aio.server(options=SERVER_OPTIONS)
    server.add_generic_rpc_handlers(handlers(welcome, pong))
    port = server.add_insecure_port(listen)
    await server.start()
    print(f"floor listening on {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="floor")
    p.add_argument("--listen", required=True)
    p.add_argument("--welcome", required=True, help="serialized SchedulerMessage, hex")
    p.add_argument("--pong", required=True, help="serialized SchedulerMessage, hex")
    args = p.parse_args(argv)
    from bench.loadgen.procfs import raise_open_files_limit

    raise_open_files_limit()
    asyncio.run(serve(args.listen, bytes.fromhex(args.welcome), bytes.fromhex(args.pong)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
