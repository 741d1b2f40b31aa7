"""One simulated node: the real agent's protocol over its own grpc.aio channel (one TCP
connection), with the real agent's timing rules (agent/daemon.py, agent/link/stream.py).

- hello with the inventory and the attempts it holds; the welcome sets the heartbeat interval,
  the telemetry period and the keepalive interval, and lists the attempts to keep (others are
  dropped, as the agent stops their containers); a pong may change the telemetry period;
- a heartbeat right after the welcome, then one every telemetry period, and a keepalive when
  nothing was sent for the keepalive interval (checked every heartbeat interval); a stream
  silent for max(5 gaps, 10 s) is dropped and redialled, with the agent's capped exponential
  backoff (a gap: the shorter of the telemetry period and the keepalive interval);
- a launch order is answered STARTED after ``start_delay`` and EXITED (code 0) after
  ``job_runtime``; a kill order KILLED at once; final events are sent again after a reconnect
  until the scheduler acks them, and an ack removes the attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from bench.loadgen import protocol
from rota.agent.link.stream import CHANNEL_OPTIONS
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc

RAMP, WINDOW, AFTER = 0, 1, 2  # the phase a counted message falls in
PHASES = ("ramp", "window", "after")

# Every simulated node gets its own connection: grpc would otherwise share one subchannel
# between channels to the same target.
NODE_CHANNEL_OPTIONS = [*CHANNEL_OPTIONS, ("grpc.use_local_subchannel_pool", 1)]


@dataclass
class Stats:
    """What the nodes of one worker process saw. Heartbeats are counted by the phase in which
    they were sent; a pong answers the oldest unanswered heartbeat or keepalive of its stream."""

    sent: list[int] = field(default_factory=lambda: [0, 0, 0])
    keepalives: list[int] = field(default_factory=lambda: [0, 0, 0])  # of ``sent``
    answered: list[int] = field(default_factory=lambda: [0, 0, 0])
    rtts: list[float] = field(default_factory=list)  # seconds, heartbeats sent in the window
    disconnects: list[int] = field(default_factory=lambda: [0, 0, 0])  # streams that broke
    reconnects: list[int] = field(default_factory=lambda: [0, 0, 0])  # welcomes after the first
    dial_failures: int = 0  # attempts that ended before a welcome
    dial_codes: dict[str, int] = field(default_factory=dict)  # their gRPC status, by name
    watchdog_drops: int = 0  # streams dropped because the scheduler fell silent
    launched: dict[str, float] = field(default_factory=dict)  # display id -> monotonic time
    completed: dict[str, float] = field(default_factory=dict)  # ack of its EXITED event
    launched_on_stopped: int = 0  # launch orders that reached a stopped node
    kills: int = 0
    connected: int = 0
    heartbeat_interval: float = 0.0  # from the last welcome
    telemetry_period: float = 0.0  # the longest a welcome or pong gave
    keepalive_interval: float = 0.0  # from the last welcome


@dataclass(frozen=True)
class NodeSettings:
    target: str
    start_delay: float = 0.2  # launch order -> STARTED (a container start takes ~0.25 s)
    job_runtime: float = 10.0  # STARTED -> EXITED
    default_interval: float = 2.0  # until a welcome says otherwise


class SimNode:
    """A simulated agent. ``run`` serves until ``shutdown``; ``stop`` makes it fail like a dead
    agent: ``freeze`` keeps the connection open and sends nothing (a hung process or a silent
    partition), ``close`` ends the stream; either way it never redials."""

    def __init__(
        self,
        name: str,
        token: str,
        settings: NodeSettings,
        stats: Stats,
        phase: Callable[[], int],
    ) -> None:
        self.name = name
        self.token = token
        self.settings = settings
        self.stats = stats
        self.phase = phase
        self.uuids = [protocol.gpu_uuid(name, i) for i in range(protocol.GPUS_PER_NODE)]
        self.attempts: dict[tuple[int, int], protocol.Attempt] = {}
        self.final: dict[tuple[int, int], tuple[str, int]] = {}  # kind and exit code, until acked
        self.jobs: dict[tuple[int, int], asyncio.Task[None]] = {}
        self.interval = settings.default_interval
        self.period = settings.default_interval  # telemetry period
        self.keepalive = 0.0  # 0: telemetry suffices
        self._sent_beat = self._sent_any = float("-inf")  # monotonic times
        self.stopped = False  # stop(): never send or redial again
        self._closing = False  # shutdown(): the run is over
        self._outbox: asyncio.Queue[pb.AgentMessage] | None = None
        self._pending: deque[tuple[float, int]] = deque()  # heartbeats awaiting their pong
        self._call: grpc.aio.StreamStreamCall | None = None
        self._welcomed = False
        self._last_heard = 0.0  # when the scheduler last sent anything

    # ------------------------------------------------------------ control

    def stop(self, mode: str) -> None:
        self.stopped = True
        if mode == "close" and self._call is not None:
            self._call.cancel()

    def shutdown(self) -> None:
        self._closing = True
        if self._call is not None:
            self._call.cancel()
        for task in self.jobs.values():
            task.cancel()

    @property
    def idle(self) -> bool:
        return not self.attempts and self._outbox is not None

    # ------------------------------------------------------------ connection loop

    async def run(self, start_at: float) -> None:
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        backoff = 0.2
        while not (self._closing or self.stopped):
            began = time.monotonic()
            with contextlib.suppress(grpc.aio.AioRpcError, asyncio.CancelledError):
                await self._serve_once()
            if self._closing or self.stopped:
                break
            if time.monotonic() - began > 10:
                backoff = 0.2
            await asyncio.sleep(backoff * (1 + random.random() / 2))
            backoff = min(backoff * 2, 5.0)

    async def _serve_once(self) -> None:
        channel = grpc.aio.insecure_channel(self.settings.target, options=NODE_CHANNEL_OPTIONS)
        tasks: list[asyncio.Task[None]] = []
        welcomed = False
        code = "OK"  # the stream ended without an error
        try:
            call = pb_grpc.AgentServiceStub(channel).Connect()
            self._call = call
            await call.write(protocol.hello(self.name, self.token, list(self.attempts.values())))
            outbox: asyncio.Queue[pb.AgentMessage] = asyncio.Queue()
            self._last_heard = time.monotonic()
            while True:
                msg = await call.read()
                if msg is grpc.aio.EOF:
                    break
                self._last_heard = time.monotonic()
                kind = msg.WhichOneof("msg")
                if kind == "pong":
                    self._on_pong(msg.pong)  # counted even when frozen: the scheduler did answer
                    continue
                if self.stopped:  # frozen: acts on nothing, but the order was sent
                    if kind == "launch":
                        self.stats.launched.setdefault(msg.launch.display_id, time.monotonic())
                        self.stats.launched_on_stopped += 1
                    continue
                if kind == "welcome":
                    welcomed = True
                    self._on_welcome(msg.welcome, outbox)
                    tasks = [
                        asyncio.create_task(self._write(call, outbox)),
                        asyncio.create_task(self._heartbeats(call)),
                    ]
                elif kind == "launch":
                    self._on_launch(msg.launch)
                elif kind == "kill":
                    self._on_kill(msg.kill)
                elif kind == "ack":
                    self._on_ack(msg.ack)
                elif kind == "log_request" and not msg.log_request.cancel:
                    self._send(protocol.log_eof(msg.log_request.request_id))
        except grpc.aio.AioRpcError as exc:
            code = exc.code().name
            raise
        finally:
            for task in tasks:
                task.cancel()
            if self._call is not None:
                self._call.cancel()
            self._call = None
            self._outbox = None
            self._pending.clear()
            if welcomed:
                self.stats.connected -= 1
                if not (self._closing or self.stopped):
                    self.stats.disconnects[self.phase()] += 1
            else:
                self.stats.dial_failures += 1
                self.stats.dial_codes[code] = self.stats.dial_codes.get(code, 0) + 1
            await channel.close()

    def _on_welcome(self, welcome: pb.Welcome, outbox: asyncio.Queue[pb.AgentMessage]) -> None:
        self.interval = welcome.heartbeat_interval or self.interval
        self.period = max(welcome.telemetry_period, self.interval)
        self.keepalive = welcome.keepalive_interval
        self.stats.heartbeat_interval = self.interval
        self.stats.keepalive_interval = self.keepalive
        self._seen_period()
        if self._welcomed:
            self.stats.reconnects[self.phase()] += 1
        self._welcomed = True
        self.stats.connected += 1
        keep = {(a.job_id, a.attempt) for a in welcome.keep}
        for key in [k for k in self.attempts if k not in keep and k not in self.final]:
            self._forget(key)  # the agent stops containers the scheduler does not list
        self._outbox = outbox
        for key, (kind, code) in self.final.items():
            self._send(protocol.job_event(self.attempts[key], kind, code))
        self._heartbeat()

    # ------------------------------------------------------------ sending

    def _send(self, msg: pb.AgentMessage) -> None:
        if self._outbox is not None and not self.stopped:
            self._outbox.put_nowait(msg)

    async def _write(self, call: grpc.aio.StreamStreamCall, outbox: asyncio.Queue) -> None:
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
            while True:
                await call.write(await outbox.get())

    def _heartbeat(self, keepalive: bool = False) -> None:
        if self._outbox is None or self.stopped:
            return
        now = time.monotonic()
        self._pending.append((now, self.phase()))
        self.stats.sent[self._pending[-1][1]] += 1
        self._sent_any = now
        if keepalive:
            self.stats.keepalives[self._pending[-1][1]] += 1
            self._send(protocol.keepalive())
        else:
            self._sent_beat = now
            self._send(protocol.heartbeat(self.uuids, list(self.attempts.values())))

    async def _heartbeats(self, call: grpc.aio.StreamStreamCall) -> None:
        while True:
            await asyncio.sleep(self.interval)
            if self.stopped:
                return
            now = time.monotonic()
            gap = min(self.period, self.keepalive or self.period)
            if now - self._last_heard > max(5 * gap, 10.0):
                self.stats.watchdog_drops += 1
                call.cancel()
                return
            slack = self.interval / 2  # as the agent: the sleep wakes a little early or late
            if now - self._sent_beat >= self.period - slack:
                self._heartbeat()
            elif self.keepalive and now - self._sent_any >= self.keepalive - slack:
                self._heartbeat(keepalive=True)

    def _seen_period(self) -> None:
        self.stats.telemetry_period = max(self.stats.telemetry_period, self.period)

    # ------------------------------------------------------------ orders

    def _on_pong(self, pong: pb.Pong) -> None:
        if pong.telemetry_period:
            self.period = max(pong.telemetry_period, self.interval)
            self._seen_period()
        if not self._pending:
            return
        sent, phase = self._pending.popleft()
        self.stats.answered[phase] += 1
        if phase == WINDOW:
            self.stats.rtts.append(time.monotonic() - sent)

    def _on_launch(self, order: pb.LaunchOrder) -> None:
        key = (order.job_id, order.attempt)
        if key in self.attempts:
            return  # sent again after a reconnect; the container already exists
        self.attempts[key] = protocol.Attempt(
            order.job_id, order.attempt, order.display_id, tuple(order.gpu_indices)
        )
        self.stats.launched.setdefault(order.display_id, time.monotonic())
        self.jobs[key] = asyncio.create_task(self._run_job(key))

    async def _run_job(self, key: tuple[int, int]) -> None:
        await asyncio.sleep(self.settings.start_delay)
        self._send(protocol.job_event(self.attempts[key], "STARTED"))
        await asyncio.sleep(self.settings.job_runtime)
        self._finish(key, "EXITED", 0)

    def _on_kill(self, order: pb.KillOrder) -> None:
        key = (order.job_id, order.attempt)
        if key not in self.attempts or key in self.final:
            return
        self.stats.kills += 1
        self._finish(key, "KILLED", 137)

    def _finish(self, key: tuple[int, int], kind: str, code: int) -> None:
        task = self.jobs.pop(key, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        attempt = self.attempts[key]
        attempt.running = False
        self.final[key] = (kind, code)
        self._send(protocol.job_event(attempt, kind, code))

    def _on_ack(self, ack: pb.EventAck) -> None:
        key = (ack.job_id, ack.attempt)
        final = self.final.get(key)
        if final is None:
            return
        if final[0] == "EXITED":
            self.stats.completed.setdefault(self.attempts[key].display_id, time.monotonic())
        self._forget(key)

    def _forget(self, key: tuple[int, int]) -> None:
        task = self.jobs.pop(key, None)
        if task is not None:
            task.cancel()
        self.attempts.pop(key, None)
        self.final.pop(key, None)
