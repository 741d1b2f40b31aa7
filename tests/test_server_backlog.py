"""New calls that arrive while the scheduler's event loop is busy wait their turn: gRPC's own
backlog of not-yet-taken calls (1,000 by default, then refused at random) would refuse them,
and every agent refused at once redials, so a restart with many agents never settled."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from pathlib import Path

import grpc

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler
from tests.support.tokens import aio_channel

CALLS = 3_000


def _call_all(address: str, token: str, sending: threading.Event, codes: Counter[str]) -> None:
    """``CALLS`` ListJobs calls at once over 50 connections; ``codes`` counts their outcomes."""

    async def one(stub: pb_grpc.JobServiceStub) -> None:
        try:
            await stub.ListJobs(pb.ListJobsRequest(page_size=1), timeout=120)
            codes["OK"] += 1
        except grpc.aio.AioRpcError as exc:
            codes[exc.code().name] += 1

    async def main() -> None:
        channels = [aio_channel(address, token) for _ in range(50)]
        stubs = [pb_grpc.JobServiceStub(c) for c in channels]
        for channel in channels:
            await channel.channel_ready()
        sending.set()
        await asyncio.gather(*(one(stubs[i % len(stubs)]) for i in range(CALLS)))
        for channel in channels:
            await channel.close()

    asyncio.run(main())


def test_calls_arriving_while_the_loop_is_busy_are_all_answered(tmp_path: Path) -> None:
    async def scenario() -> Counter[str]:
        async with InProcessScheduler(tmp_path) as sched:
            codes: Counter[str] = Counter()
            sending = threading.Event()
            client = threading.Thread(
                target=_call_all, args=(sched.address, sched.admin_token, sending, codes)
            )
            client.start()
            assert await asyncio.to_thread(sending.wait, 60)
            time.sleep(2.0)  # the event loop is busy: every call arriving now waits in gRPC
            await asyncio.to_thread(client.join, 180)
            return codes

    assert asyncio.run(scenario()) == Counter({"OK": CALLS})
