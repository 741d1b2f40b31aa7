"""A node that speaks the AgentService protocol from a thread, without Docker or NVML.

It says hello with a simulated inventory, then sends a heartbeat every ``interval`` seconds and
records how long each pong took; orders are received and ignored (launched jobs stay
CONFIGURING), but the answers to what a test sends (``send``) are kept in ``replies``. Used by tests and benchmarks that need a registered, live node and want to know
whether the scheduler kept answering its stream.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Iterator

import grpc

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc


class FakeAgent:
    """One simulated node; ``pongs`` holds each heartbeat's round trip in seconds."""

    def __init__(
        self, address: str, node: str, gpus: int = 8, interval: float = 0.5, token: str = "tok"
    ) -> None:
        self.address = address
        self.node = node
        self.gpus = gpus
        self.interval = interval
        self.token = token
        self.welcomed = threading.Event()
        self.pongs: list[float] = []
        self.received: collections.Counter[str] = collections.Counter()  # orders by kind
        self.dropped: str = ""  # why the stream ended while the agent was not stopping
        self.replies: queue.Queue[pb.JobCommandReply] = queue.Queue()
        self._sent: collections.deque[float] = collections.deque()
        self._stop = threading.Event()
        self._outbox: queue.Queue[pb.AgentMessage | None] = queue.Queue()
        self._channel = grpc.insecure_channel(address)
        self._threads: list[threading.Thread] = []

    def _hello(self) -> pb.AgentMessage:
        inventory = pb.Inventory(
            gpus=[
                pb.GpuInfo(index=i, uuid=f"GPU-{self.node}-{i}", name="A100", memory_total=80 << 30)
                for i in range(self.gpus)
            ],
            cpus=64,
            memory=512 << 30,
            simulated=True,
            gpu_mode="env",
        )
        return pb.AgentMessage(
            hello=pb.Hello(node_name=self.node, token=self.token, inventory=inventory)
        )

    def _messages(self) -> Iterator[pb.AgentMessage]:
        yield self._hello()
        while True:
            msg = self._outbox.get()
            if msg is None:
                return
            yield msg

    def _beat(self) -> None:
        self.welcomed.wait(30)
        while not self._stop.wait(self.interval):
            self._sent.append(time.monotonic())
            beat = pb.Heartbeat(engine_healthy=True, time=time.time())
            self._outbox.put(pb.AgentMessage(heartbeat=beat))

    def _read(self) -> None:
        stub = pb_grpc.AgentServiceStub(self._channel)
        try:
            for msg in stub.Connect(self._messages()):
                kind = msg.WhichOneof("msg")
                self.received[kind] += 1
                if kind == "welcome":
                    self.welcomed.set()
                elif kind == "job_command_reply":
                    self.replies.put(msg.job_command_reply)
                elif kind == "pong" and self._sent:
                    self.pongs.append(time.monotonic() - self._sent.popleft())
            if not self._stop.is_set():
                self.dropped = "the scheduler ended the stream"
        except grpc.RpcError as exc:
            if not self._stop.is_set():
                self.dropped = f"{exc.code().name}: {exc.details()}"

    def send(self, msg: pb.AgentMessage) -> None:
        """Send ``msg`` on the stream (after the hello)."""
        self._outbox.put(msg)

    def start(self, timeout: float = 30) -> FakeAgent:
        """Connect and wait for the welcome."""
        for target in (self._read, self._beat):
            thread = threading.Thread(target=target, daemon=True, name=f"fake-agent-{self.node}")
            thread.start()
            self._threads.append(thread)
        if not self.welcomed.wait(timeout):
            raise AssertionError(f"fake agent {self.node} got no welcome: {self.dropped}")
        return self

    def stop(self) -> None:
        self._stop.set()
        self._outbox.put(None)
        self._channel.close()
        for thread in self._threads:
            thread.join(10)
