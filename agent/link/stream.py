"""The agent's one bidirectional stream to the scheduler, with reconnects and backoff.

This is the only agent module that imports generated protobuf code: it converts the agent's
domain objects to and from the wire.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator

import grpc

from rota.agent.gpu.base import GpuSample, Inventory
from rota.agent.model import (
    Ack,
    AttemptRef,
    HelloInfo,
    Kill,
    Launch,
    LogRequest,
    Order,
    Report,
    Welcome,
)
from rota.tls import channel_credentials
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from rota.wire import gpus_to_pb, links_to_pb, spec_from_pb

log = logging.getLogger("rota.agent")

CHANNEL_OPTIONS = [
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", 64 * 2**20),
]


class Rejected(Exception):
    """The scheduler refused this agent (unknown node or wrong token): do not retry."""


class Link:
    """Keeps the stream open; ``send_*`` queue messages for the current stream.

    ``hello`` builds the hello (re-read on every reconnect); ``on_order`` receives each order;
    ``on_connect`` runs after the scheduler's welcome, ``on_disconnect`` when a stream ends.
    """

    def __init__(
        self,
        address: str,
        hello: Callable[[], HelloInfo],
        on_order: Callable[[Order], None],
        on_disconnect: Callable[[], None] = lambda: None,
        tls: tuple[str, str, str] | None = None,
    ) -> None:
        """``tls``: (CA, client certificate, key) file paths; the scheduler is verified against
        the CA and, when both are given, the certificate is presented (mutual TLS)."""
        self.address = address
        self._credentials = channel_credentials(*tls) if tls else None
        self._hello = hello
        self._on_order = on_order
        self._on_disconnect = on_disconnect
        self._outbox: queue.Queue[pb.AgentMessage | None] = queue.Queue()
        self._stop = threading.Event()
        self.connected = threading.Event()
        self.last_heard = time.monotonic()  # when the scheduler last sent anything
        self._call: grpc.Future | None = None

    # ------------------------------------------------------------ sending

    def send_report(self, report: Report) -> None:
        self._outbox.put(
            pb.AgentMessage(
                job_event=pb.AgentJobEvent(
                    job_id=report.job_id,
                    attempt=report.attempt,
                    kind=pb.JobEventKind.Value(report.kind),
                    exit_code=report.exit_code,
                    oom_killed=report.oom_killed,
                    message=report.message,
                    time=report.time,
                    engine_fault=report.engine_fault,
                )
            )
        )

    def send_heartbeat(
        self,
        samples: list[GpuSample],
        attempts: list[AttemptRef],
        healthy: bool,
        error: str,
        owners: dict[int, str],
    ) -> None:
        self._outbox.put(
            pb.AgentMessage(
                heartbeat=pb.Heartbeat(
                    gpus=[_sample_to_pb(s, owners) for s in samples],
                    attempts=[_attempt_to_pb(a) for a in attempts],
                    engine_healthy=healthy,
                    engine_error=error,
                    time=time.time(),
                )
            )
        )

    def send_log(
        self, request_id: int, data: bytes = b"", eof: bool = False, error: str = ""
    ) -> None:
        self._outbox.put(
            pb.AgentMessage(
                log_data=pb.LogData(request_id=request_id, data=data, eof=eof, error=error)
            )
        )

    # ------------------------------------------------------------ loop

    def drop(self) -> None:
        """Abandon the current stream (it looks dead); ``run`` reconnects."""
        call = self._call
        if call is not None:
            call.cancel()

    def stop(self) -> None:
        self._stop.set()
        self._outbox.put(None)

    def run(self) -> None:
        """Connect, serve, and reconnect with capped exponential backoff until stopped.

        Raises Rejected when the scheduler refuses the node's name or token.
        """
        backoff = 0.2
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._serve_once()
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                    raise Rejected(exc.details() if hasattr(exc, "details") else str(exc)) from None
                log.warning(
                    "scheduler %s unreachable or stream broken (%s); retrying",
                    self.address,
                    code.name if code else exc,
                )
            finally:
                if self.connected.is_set():
                    self.connected.clear()
                    self._on_disconnect()
            if self._stop.is_set():
                return
            if time.monotonic() - started > 10:
                backoff = 0.2
            self._stop.wait(backoff * (1 + random.random() / 2))
            backoff = min(backoff * 2, 5.0)

    def _serve_once(self) -> None:
        info = self._hello()
        inventory = _inventory_to_pb(info.inventory)
        inventory.cpus = info.cpus
        inventory.memory = info.memory
        inventory.labels.update(info.labels)
        inventory.gpu_mode = info.gpu_mode
        hello = pb.AgentMessage(
            hello=pb.Hello(
                node_name=info.node,
                token=info.token,
                agent_version=_version(),
                inventory=inventory,
                attempts=[_attempt_to_pb(a) for a in info.attempts],
                address=info.address,
            )
        )
        # drop what was queued for a dead stream: reports are re-sent from the runtime's state
        while not self._outbox.empty():
            self._outbox.get_nowait()
        channel = (
            grpc.secure_channel(self.address, self._credentials, options=CHANNEL_OPTIONS)
            if self._credentials
            else grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)
        )
        with channel:
            stub = pb_grpc.AgentServiceStub(channel)
            responses = stub.Connect(self._requests(hello))
            self._call = responses
            self.last_heard = time.monotonic()
            try:
                for msg in responses:
                    self.last_heard = time.monotonic()
                    if msg.WhichOneof("msg") == "pong":
                        continue
                    order = _order_from_pb(msg)
                    if isinstance(order, Welcome):
                        self.connected.set()
                    self._on_order(order)
                    if self._stop.is_set():
                        break
            finally:
                self._call = None
                responses.cancel()
                self._outbox.put(None)

    def _requests(self, hello: pb.AgentMessage) -> Iterator[pb.AgentMessage]:
        yield hello
        while True:
            msg = self._outbox.get()
            if msg is None:
                return
            yield msg


def _version() -> str:
    from rota import __version__

    return __version__


def _attempt_to_pb(a: AttemptRef) -> pb.AttemptStatus:
    return pb.AttemptStatus(
        job_id=a.job_id, attempt=a.attempt, container_id=a.container_id, running=a.running
    )


def _sample_to_pb(s: GpuSample, owners: dict[int, str]) -> pb.GpuTelemetry:
    return pb.GpuTelemetry(
        index=s.index,
        uuid=s.uuid,
        utilization=s.utilization,
        memory_used=s.memory_used,
        temperature=s.temperature,
        power=s.power,
        error=s.error,
        processes=[
            pb.GpuProcess(pid=p.pid, memory_used=p.memory_used, job_id=owners.get(p.pid, ""))
            for p in s.processes
        ],
    )


def _inventory_to_pb(inv: Inventory) -> pb.Inventory:
    return pb.Inventory(
        gpus=gpus_to_pb(inv.gpus),
        links=links_to_pb(inv.links),
        driver_version=inv.driver_version,
        cuda_version=inv.cuda_version,
        simulated=inv.simulated,
        note=inv.note,
    )


def _order_from_pb(msg: pb.SchedulerMessage) -> Order:
    kind = msg.WhichOneof("msg")
    if kind == "launch":
        o = msg.launch
        spec = spec_from_pb(o.spec)
        return Launch(
            job_id=o.job_id,
            attempt=o.attempt,
            display_id=o.display_id,
            image=spec.image,
            command=spec.command,
            env={**spec.env, **dict(o.env)},
            gpu_indices=tuple(o.gpu_indices),
            gpu_uuids=tuple(o.gpu_uuids),
            time_limit=o.time_limit,
            cpus=spec.cpus,
            memory=spec.memory,
            shm_size=spec.shm_size,
            mounts=spec.mounts,
            workdir=spec.workdir,
            pull=spec.pull,
            host_network=o.host_network,
            user=o.user,
            uid=o.uid if o.HasField("uid") else None,
            gid=o.gid if o.HasField("gid") else None,
        )
    if kind == "kill":
        return Kill(msg.kill.job_id, msg.kill.attempt, msg.kill.reason, msg.kill.grace)
    if kind == "ack":
        return Ack(msg.ack.job_id, msg.ack.attempt)
    if kind == "welcome":
        return Welcome(
            msg.welcome.heartbeat_interval,
            tuple(AttemptRef(a.job_id, a.attempt) for a in msg.welcome.keep),
            msg.welcome.node_grace,
        )
    r = msg.log_request
    return LogRequest(r.request_id, r.job_id, r.attempt, r.follow, r.cancel)
