"""The real agent (link, orders, reports) against an in-process AgentService, its containers
faked (``FakeRuntime``): no Docker, no scheduler process.

What a user sees: a job's end reported while the scheduler is away is not lost (it is sent
again on reconnect until acknowledged, then forgotten), and a job the scheduler no longer runs
on this node is stopped when the node reconnects.
"""

from __future__ import annotations

import queue
import signal
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc

from rota.agent.config import AgentConfig
from rota.agent.daemon import Agent
from rota.agent.runtime.base import ReportFn
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import wait_for
from tests.support.fake_runtime import FakeRuntime

Event = tuple[int, int, str, int]  # job id, attempt, kind, exit code


class ScriptedScheduler(pb_grpc.AgentServiceServicer):
    """Plays the scheduler's side of each connection from ``script``; keeps every hello and
    every job event the agent sent, by connection."""

    def __init__(self) -> None:
        self.hellos: list[pb.Hello] = []
        self.events: queue.Queue[tuple[int, Event]] = queue.Queue()
        self.runtime: FakeRuntime | None = None
        self.agent: Agent | None = None
        self.failure: BaseException | None = None

    def Connect(
        self, requests: Iterator[pb.AgentMessage], context: grpc.ServicerContext
    ) -> Iterator[pb.SchedulerMessage]:
        self.hellos.append(next(requests).hello)
        conn = len(self.hellos)
        threading.Thread(target=self._read, args=(conn, requests), daemon=True).start()
        try:
            yield from self.script(conn)
        except BaseException as exc:  # a failed expectation ends the test, not just the stream
            self.failure = exc
            assert self.agent is not None
            self.agent.stop()

    def _read(self, conn: int, requests: Iterator[pb.AgentMessage]) -> None:
        try:
            for msg in requests:
                if msg.WhichOneof("msg") == "job_event":
                    e = msg.job_event
                    kind = pb.JobEventKind.Name(e.kind)
                    self.events.put((conn, (e.job_id, e.attempt, kind, e.exit_code)))
        except grpc.RpcError:
            pass

    def expect(self, conn: int, job_id: int, kind: str) -> Event:
        """The next job event of job ``job_id`` on connection ``conn``, which must be ``kind``."""
        deadline = time.monotonic() + 10
        while (left := deadline - time.monotonic()) > 0:
            got_conn, event = self.events.get(timeout=left)
            if got_conn == conn and event[0] == job_id:
                assert event[2] == kind, event
                return event
        raise AssertionError(f"no {kind} for job {job_id} on connection {conn}")

    def script(self, conn: int) -> Iterator[pb.SchedulerMessage]:
        runtime = self.runtime
        assert runtime is not None and self.agent is not None
        if conn == 1:
            yield pb.SchedulerMessage(welcome=pb.Welcome(heartbeat_interval=0.2))
            for job in (7, 8):
                yield _launch(job)
                self.expect(1, job, "STARTED")
            runtime.exit(7, 1, code=3)
            self.expect(1, 7, "EXITED")
            return  # the stream ends before the scheduler acknowledged job 7's end
        keep = [pb.AttemptStatus(job_id=99, attempt=1)]  # job 8 was requeued elsewhere
        yield pb.SchedulerMessage(welcome=pb.Welcome(heartbeat_interval=0.2, keep=keep))
        assert self.expect(2, 7, "EXITED") == (7, 1, "EXITED", 3)  # sent again
        self.expect(2, 8, "KILLED")
        yield pb.SchedulerMessage(ack=pb.EventAck(job_id=7, attempt=1))
        yield pb.SchedulerMessage(ack=pb.EventAck(job_id=8, attempt=1))
        wait_for(lambda: not runtime.attempts(), 10, what="the acknowledged attempts forgotten")
        self.agent.stop()


def _launch(job_id: int) -> pb.SchedulerMessage:
    spec = pb.JobSpec(image="busybox", command=["true"])
    order = pb.LaunchOrder(
        job_id=job_id, attempt=1, spec=spec, gpu_indices=[job_id - 7], display_id=str(job_id)
    )
    return pb.SchedulerMessage(launch=order)


def test_an_end_reported_while_away_is_sent_again_and_unkept_jobs_stop(tmp_path: Path) -> None:
    sched = ScriptedScheduler()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    pb_grpc.add_AgentServiceServicer_to_server(sched, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    config = AgentConfig(
        node="n1",
        scheduler=f"127.0.0.1:{port}",
        data_dir=tmp_path,
        token="tok",
        simulate_gpus=2,
        heartbeat_interval=0.2,
    )

    def runtime(report: ReportFn) -> FakeRuntime:
        sched.runtime = FakeRuntime(report, time.time, tmp_path / "logs")
        return sched.runtime

    agent = sched.agent = Agent(config, runtime)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    watchdog = threading.Timer(30, agent.stop)
    watchdog.start()
    try:
        assert agent.run() == 0
    finally:
        watchdog.cancel()
        server.stop(grace=None)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if sched.failure is not None:
        raise sched.failure
    assert len(sched.hellos) == 2
    held = {(a.job_id, a.attempt, a.running) for a in sched.hellos[1].attempts}
    assert held == {(7, 1, False), (8, 1, True)}  # the reconnect lists the unacknowledged end
    assert sched.runtime is not None and sched.runtime.attempts() == []
