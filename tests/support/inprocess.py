"""The scheduler in-process behind a real grpc.aio server on 127.0.0.1 (no Docker, no agent
process): the services over a SQLite file, the engine with its threads and pass loop, and the
servicers as the daemon wires them. Agents are plain gRPC streams the test drives."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import grpc

from rota.scheduler.api.auth import AuthInterceptor
from rota.scheduler.api.servicers import add_servicers
from rota.scheduler.cluster.users import Principal
from rota.scheduler.config import SchedulerConfig, policy_config
from rota.scheduler.core.services import Services, build_services
from rota.scheduler.core_thread import Executor, InlineExecutor
from rota.scheduler.daemon import SERVER_OPTIONS
from rota.scheduler.engine import Engine
from rota.scheduler.policy import make_policy
from rota.scheduler.store.store import Store
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.tokens import aio_channel

T = TypeVar("T")


class AgentStream:
    """One agent's stream: messages put in ``send`` go out, ``received`` collects replies.
    Waits are on what arrives (``wait_for``, ``handled``), never on time."""

    def __init__(self, stub: pb_grpc.AgentServiceStub, hello: pb.Hello) -> None:
        self.send: asyncio.Queue[pb.AgentMessage | None] = asyncio.Queue()
        self.send.put_nowait(pb.AgentMessage(hello=hello))
        self.received: list[pb.SchedulerMessage] = []
        self._sent = 0  # messages sent
        self._pings = 0  # heartbeats and keepalives sent: each is answered by one pong
        self._arrived = asyncio.Condition()
        self.call = stub.Connect(self._messages())
        self._reader = asyncio.create_task(self._read())

    async def _messages(self) -> AsyncIterator[pb.AgentMessage]:
        while (msg := await self.send.get()) is not None:
            self._sent += 1
            if msg.WhichOneof("msg") in ("heartbeat", "keepalive"):
                self._pings += 1
            yield msg

    async def _read(self) -> None:
        try:
            async for msg in self.call:
                async with self._arrived:
                    self.received.append(msg)
                    self._arrived.notify_all()
        finally:
            async with self._arrived:
                self._arrived.notify_all()

    async def wait_for(
        self, found: Callable[[list[pb.SchedulerMessage]], T | None], timeout: float = 10.0
    ) -> T:
        """The first truthy ``found(received)``, waiting for messages as they arrive; the
        stream's error if it ends first."""
        async with asyncio.timeout(timeout), self._arrived:
            while not (result := found(self.received)):
                if self._reader.done():
                    await self._reader  # raises the stream's error
                    raise AssertionError("the stream ended")
                await self._arrived.wait()
            return result

    async def latest(self, kind: str, timeout: float = 10.0) -> Any:
        """The latest message of ``kind`` (a ``SchedulerMessage`` field), once there is one."""

        def last(received: list[pb.SchedulerMessage]) -> Any:
            found = [getattr(m, kind) for m in received if m.WhichOneof("msg") == kind]
            return found[-1] if found else None

        return await self.wait_for(last, timeout)

    async def welcomed(self, timeout: float = 10.0) -> pb.Welcome:
        """The Welcome the scheduler answered the hello with."""
        welcome: pb.Welcome = await self.latest("welcome", timeout)
        return welcome

    async def handled(self, timeout: float = 10.0) -> None:
        """Wait until the scheduler has received everything sent before this call, and this
        agent every order queued for it meanwhile: a keepalive is answered on receipt, after
        the messages before it and behind the orders before it."""
        self.send.put_nowait(pb.AgentMessage(keepalive=pb.Keepalive()))
        keepalive = self._sent + self.send.qsize()  # how many are sent once it is

        def answered(received: list[pb.SchedulerMessage]) -> bool:
            pongs = sum(m.WhichOneof("msg") == "pong" for m in received)
            return self._sent >= keepalive and pongs >= self._pings

        await self.wait_for(answered, timeout)

    async def close(self) -> None:
        self.send.put_nowait(None)
        self.call.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)


class InProcessScheduler:
    """``async with InProcessScheduler(tmp_path) as sched:`` serves on ``sched.address``; the
    stubs speak as the admin user "admin" (``admin_token``, ``admin_principal``);
    ``user_channel`` makes others. ``synchronous``: service calls run at once on the event
    loop (``InlineExecutor``) instead of on the core and policy threads."""

    def __init__(self, root: Path, synchronous: bool = False, **config: object) -> None:
        self.config = SchedulerConfig(**config)  # type: ignore[arg-type]
        self.store = Store(f"sqlite:///{root / 'db.sqlite'}")
        self.services: Services = build_services(
            self.store,
            self.config,
            time.time,
            make_policy("first-fit", policy_config(self.config)),
        )
        self.admin_token = self.services.users.add("admin", admin=True)[1]
        self.admin_principal = Principal("admin", admin=True)
        self.executor: Executor | None = InlineExecutor() if synchronous else None
        self.address = ""
        self._agents: list[AgentStream] = []
        self._channels: list[grpc.aio.Channel] = []

    async def __aenter__(self) -> InProcessScheduler:
        self.engine = Engine(self.services, executor=self.executor)
        self.server = grpc.aio.server(options=SERVER_OPTIONS, interceptors=self.interceptors())
        add_servicers(self.server, self.engine)
        port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        self.engine.start()
        self.address = f"127.0.0.1:{port}"
        self.channel = aio_channel(self.address, self.admin_token)
        self.jobs = pb_grpc.JobServiceStub(self.channel)
        self.nodes = pb_grpc.NodeServiceStub(self.channel)
        self.admin = pb_grpc.AdminServiceStub(self.channel)
        self.gpus = pb_grpc.GpuServiceStub(self.channel)
        self.agent_service = pb_grpc.AgentServiceStub(self.channel)
        return self

    async def passes_done(self, count: int) -> int:
        """Wait until ``count`` scheduling passes have finished since start (the number
        finished)."""
        return await self.engine.passes.passes_done(count)

    async def fresh_pass(self) -> int:
        """Wait for a pass that began after this call (it saw every change made before)."""
        return await self.engine.passes.fresh_pass()

    async def intake_idle(self) -> None:
        """Wait until the telemetry and job events received so far are applied (after an
        agent's ``handled``, everything it sent)."""
        await self.engine.telemetry.idle()
        await self.engine.events.idle()

    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        """The server's interceptors: authentication (a subclass may add the daemon's others)."""
        return [AuthInterceptor(self.engine, time.time)]

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for agent in self._agents:
            await agent.close()
        for channel in [self.channel, *self._channels]:
            await channel.close()
        await self.server.stop(grace=None)
        await self.engine.stop()
        self.store.close()

    def user_channel(self, name: str, admin: bool = False, **fields: object) -> grpc.aio.Channel:
        """A channel speaking as a new user ``name`` (closed with the scheduler)."""
        token = self.services.users.add(name, admin, **fields)[1]  # type: ignore[arg-type]
        channel = aio_channel(self.address, token)
        self._channels.append(channel)
        return channel

    async def agent(self, name: str, token: str, gpus: int = 2) -> AgentStream:
        """Connect an agent that reports ``gpus`` GPUs and wait for its Welcome."""
        inventory = pb.Inventory(
            gpus=[
                pb.GpuInfo(index=i, uuid=f"GPU-{name}-{i}", name="A100", memory_total=80 * 2**30)
                for i in range(gpus)
            ],
            cpus=16,
            memory=64 * 2**30,
        )
        stream = AgentStream(
            self.agent_service, pb.Hello(node_name=name, token=token, inventory=inventory)
        )
        self._agents.append(stream)
        await stream.welcomed()
        return stream
