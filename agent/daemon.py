"""The node agent: reports GPUs and runs the scheduler's launch and kill orders in Docker.

Start-up order: open the GPU backend, adopt this node's containers, then connect. The agent
keeps running (reconnecting with backoff) when the scheduler goes away, and exits when the
scheduler refuses its name or token.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from rota import __version__
from rota.agent.config import AgentConfig
from rota.agent.dial import Dialer
from rota.agent.fence import SelfFence, Step
from rota.agent.fence_record import FenceRecord
from rota.agent.gpu import open_backend
from rota.agent.link.stream import Link, Rejected
from rota.agent.log_flow import LogFlow
from rota.agent.metrics import AgentCollector, MetricsServer
from rota.agent.readings import AgentReadings
from rota.agent.runtime.base import ContainerRuntime, ReportFn
from rota.agent.runtime.owners import ProcessOwners
from rota.agent.sessions import Sessions
from rota.agent.steps.node import NodeSteps
from rota.messages import (
    FENCE_KILL_MARGIN,
    AgentEvent,
    AgentMessage,
    AgentOrder,
    EventAck,
    GpuTelemetry,
    Heartbeat,
    Hello,
    JobCommand,
    JobCommandReply,
    Keepalive,
    KillOrder,
    LaunchOrder,
    LogRequest,
    Pong,
    RunningAttempt,
    SessionInput,
    SessionOpen,
    StepCancel,
    StepEnd,
    StepLaunch,
    StepOutput,
    StepStart,
    Welcome,
)

log = logging.getLogger("rota.agent")
STEP_WAIT = 60.0  # seconds an srun waits for the scheduler when it is away


class Agent:
    """Ties the GPU backend, the container runtime and the scheduler link together.

    ``runtime`` builds the container runtime from the callback that receives its events
    (``build.build_agent`` passes a ``DockerRuntime``; tests a fake).

    Time is read only from ``clock`` (Unix seconds: event and heartbeat times, time limits) and
    ``monotonic`` (how long the scheduler has been silent or away). ``steps``: the node's srun
    steps, which the runtime prepares containers for (None: step orders are refused).
    """

    def __init__(
        self,
        config: AgentConfig,
        runtime: Callable[[ReportFn], ContainerRuntime],
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        steps: NodeSteps | None = None,
    ) -> None:
        self.config = config
        self.steps = steps
        self._clock = clock
        self._monotonic = monotonic
        self.backend, self.inventory = open_backend(config.simulate_gpus, config.node)
        self.runtime = runtime(self._on_event)
        self.owners = ProcessOwners(self.runtime.container_info)
        self.fence = SelfFence(config.kill_grace, monotonic)
        self.fence_record = FenceRecord(config.data_dir / "fence.json")
        self.link = Link(
            config.scheduler,
            self._hello,
            self._on_order,
            monotonic,
            self._disconnected,
            tls=(config.ca, config.cert, config.key) if config.ca else None,
        )
        if steps is not None:
            steps.connect(self._send_step)
        self._interval = config.heartbeat_interval  # how often the GPUs are looked at
        self._period = config.heartbeat_interval  # telemetry period (the scheduler's)
        self._keepalive = 0.0  # send something at least this often (0: telemetry suffices)
        self._sent_beat = self._sent_any = float("-inf")  # monotonic times
        self._health_sent: tuple[object, ...] = ()
        self._stop = threading.Event()
        self._logs: dict[int, LogFlow] = {}  # output requests being sent
        tls = (config.ca, config.cert, config.key) if config.ca else None
        dialer = Dialer(lambda: self.link.address, tls)
        self.sessions = Sessions(
            self.runtime.open_session, self.link.send, dialer, config.terminal_buffer
        )
        self.readings = AgentReadings()
        self.metrics = MetricsServer(
            AgentCollector(
                config.node, self.inventory.gpus, self.readings, self.runtime, self.link.connected
            )
        )

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT (exit 0) or until the scheduler refuses us (exit 1)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop())
        if self.fence_record.restore(self.fence):
            log.warning(
                "last contact with the scheduler %.1fs ago (before this restart): the jobs "
                "adopted are stopped in time for node_grace %gs unless it answers",
                self.fence.silence(),
                self.fence.node_grace,
            )
        self.runtime.adopt()
        self._serve_metrics()
        threading.Thread(target=self._heartbeats, name="heartbeat", daemon=True).start()
        threading.Thread(target=self._fence_watch, name="fence", daemon=True).start()
        log.info(
            "rota agent %s: %d GPU(s)%s, GPU mode %s, scheduler %s",
            self.config.node,
            len(self.inventory.gpus),
            " (simulated)" if self.inventory.simulated else "",
            self.runtime.gpu_mode,
            self.config.scheduler,
        )
        try:
            self.link.run()
        except Rejected as exc:
            log.error("the scheduler refused node %s: %s", self.config.node, exc)
            return 1
        finally:
            self._stop.set()
            self.metrics.stop()
            self.backend.close()
        return 0

    def stop(self) -> None:
        self._stop.set()
        self.link.stop()

    def _serve_metrics(self) -> None:
        """Serve /metrics on ``metrics_listen`` when set; a port that cannot be bound is
        logged and left off: the agent runs on."""
        address = self.config.metrics_listen
        if not address:
            return
        try:
            port = self.metrics.start(address)
        except (OSError, ValueError) as exc:
            log.error("metrics off: cannot listen on %s: %s", address, exc)
            return
        log.info("serving /metrics on %s:%d", address.rsplit(":", 1)[0], port)

    # ------------------------------------------------------------ link callbacks

    def _hello(self) -> Hello:
        inventory = replace(
            self.inventory,
            cpus=float(os.cpu_count() or 0),
            memory=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
            labels=self.config.labels,
            gpu_mode=self.runtime.gpu_mode,
        )
        self.fence.hello_sent()
        return Hello(
            node_name=self.config.node,
            token=self.config.token,
            inventory=inventory,
            attempts=tuple(self.runtime.attempts()),
            address=self.config.address or socket.gethostname(),
            agent_version=__version__,
            dials_forwards=True,
            log_windows=True,
        )

    def _disconnected(self) -> None:
        """The scheduler's stream ended: end the sessions it relayed (the fence counts from
        the last confirmed contact whatever the stream does)."""
        self.sessions.close_all()
        if self.steps is not None:
            self.steps.disconnected()
        for flow in list(self._logs.values()):  # no acknowledgement will come
            flow.stop()

    def _send_step(self, msg: AgentMessage) -> None:
        """Send a step message; an srun asking while the scheduler is away waits up to
        ``STEP_WAIT`` seconds for it (on a thread of its own), then fails."""
        if self.link.connected.is_set():
            self.link.send(msg)
        elif isinstance(msg, StepStart):
            threading.Thread(target=self._send_when_connected, args=(msg,), daemon=True).start()
        elif isinstance(msg, JobCommand) and self.steps is not None:
            tool = msg.tool.removesuffix("-wait")  # sbatch --wait's question
            error = f"{tool}: error: the scheduler is not reachable from this node\n"
            self.steps.order(JobCommandReply(msg.request_id, 1, error=error))

    def _send_when_connected(self, msg: StepStart) -> None:
        if self.link.connected.wait(STEP_WAIT):
            self.link.send(msg)
        elif self.steps is not None:
            self.steps.order(StepEnd(msg.request_id, 1, error="the scheduler is not reachable"))

    def _on_event(self, event: AgentEvent) -> None:
        if self.link.connected.is_set():
            self.link.send(event)

    def _on_order(self, order: AgentOrder) -> None:
        if isinstance(order, Welcome):
            self.readings.welcomed()
            self._interval = order.heartbeat_interval or self._interval
            self._period = max(order.telemetry_period, self._interval)
            self._keepalive = order.keepalive_interval
            self._welcome_fence(order)
            self.fence_record.save(self.fence)
            self.runtime.keep_only({(a.job_id, a.attempt) for a in order.keep})
            for event in self.runtime.finals():
                self.link.send(event)
            self._send_heartbeat(self._heartbeat())
        elif isinstance(order, Pong):
            self.fence.answered()
            self.fence_record.save(self.fence)
            if order.telemetry_period:
                self._period = max(order.telemetry_period, self._interval)
        elif isinstance(order, LaunchOrder):
            self.runtime.launch(order)
        elif isinstance(order, KillOrder):
            self.runtime.kill(order)
        elif isinstance(order, EventAck):
            self.runtime.ack(order.job_id, order.attempt)
        elif isinstance(order, SessionOpen | SessionInput):
            self.sessions.order(order)
        elif isinstance(order, StepLaunch | StepOutput | StepEnd | StepCancel | JobCommandReply):
            if self.steps is not None:
                self.steps.order(order)
            elif isinstance(order, StepLaunch):
                self.link.send(StepEnd(order.request_id, 1, error="this node runs no steps"))
        elif isinstance(order, LogRequest):
            if order.cancel:
                self._logs.pop(order.request_id, LogFlow()).stop()
            elif order.ack:
                flow = self._logs.get(order.request_id)
                if flow is not None:
                    flow.acked(order.ack)
            else:
                flow = self._logs.setdefault(order.request_id, LogFlow(order.window))
                threading.Thread(target=self._send_logs, args=(order, flow), daemon=True).start()

    # ------------------------------------------------------------ heartbeats

    def _heartbeats(self) -> None:
        """Every ``heartbeat_interval``: look at the GPUs and the engine; send telemetry when
        the telemetry period is up or health changed (a GPU error, the engine), else a keepalive
        when nothing was sent for the keepalive interval."""
        while not self._stop.wait(self._interval):
            if not self.link.connected.is_set():
                self._read_gpus()  # kept fresh for /metrics while the scheduler is away
                continue
            now = self._monotonic()
            gap = min(self._period, self._keepalive or self._period)
            silent = now - self.link.last_heard
            if silent > max(5 * gap, 10.0):
                log.warning("the scheduler has not answered for %.0fs; reconnecting", silent)
                self.link.drop()
                continue
            beat = self._heartbeat()
            slack = self._interval / 2  # the wait wakes a little early or late
            if now - self._sent_beat >= self._period - slack or _health(beat) != self._health_sent:
                self._send_heartbeat(beat)
            elif self._keepalive and now - self._sent_any >= self._keepalive - slack:
                self.fence.asked()
                self.link.send(Keepalive())
                self._sent_any = now

    # ------------------------------------------------------------ self-fencing

    def _welcome_fence(self, welcome: Welcome) -> None:
        """Take the scheduler's timings for the fence; say when they shorten kill_grace."""
        before = self.fence.kill_grace
        self.fence.welcomed(welcome.node_grace, welcome.node_timeout)
        shortened = self.fence.kill_grace
        if shortened < self.fence.configured_kill_grace and shortened != before:
            log.warning(
                "kill_grace %gs shortened to %gs when cut off from the scheduler: its "
                "node_grace %gs leaves no more after node_timeout %gs of silence and %gs to "
                "kill the containers before it may run their jobs elsewhere",
                self.fence.configured_kill_grace,
                shortened,
                welcome.node_grace,
                self.fence.node_timeout,
                FENCE_KILL_MARGIN,
            )

    def _fence_watch(self) -> None:
        """Stop this node's jobs, whatever the stream's state, in time for the scheduler's
        ``node_grace`` (``SelfFence``): SIGTERM, then SIGKILL to whatever still runs."""
        while not self._stop.wait(self.fence.wait()):
            step = self.fence.due()
            silence = self.fence.silence()
            if step is Step.TERM:
                log.warning(
                    "no contact with the scheduler for %.1fs: stopping this node's jobs "
                    "(SIGKILL after %gs) before they may run elsewhere (node_grace %gs)",
                    silence,
                    self.fence.kill_grace,
                    self.fence.node_grace,
                )
                reason = f"no contact with the scheduler for {silence:.0f}s"
                self.runtime.fence(reason, self.fence.kill_grace)
            elif step is Step.KILL:
                killed = self.runtime.fence_kill()
                if killed:
                    log.warning(
                        "no contact with the scheduler for %.1fs: sent SIGKILL to %d "
                        "container(s) still running",
                        silence,
                        killed,
                    )

    def _send_heartbeat(self, beat: Heartbeat) -> None:
        self.fence.asked()
        self.link.send(beat)
        self._sent_beat = self._sent_any = self._monotonic()
        self._health_sent = _health(beat)
        self.readings.heartbeat_sent()

    def _heartbeat(self) -> Heartbeat:
        """Telemetry of every GPU now (the sample recorded for /metrics), with the attempts
        held and the engine's health."""
        health = self.runtime.health()
        gpus, attempts = self._read_gpus()
        return Heartbeat(
            gpus=gpus,
            attempts=tuple(attempts),
            engine_healthy=health.healthy,
            engine_error=health.error,
            time=self._clock(),
        )

    def _read_gpus(self) -> tuple[tuple[GpuTelemetry, ...], list[RunningAttempt]]:
        """Sample the GPUs (each process with its job) and record the sample; the attempts
        the processes were matched against."""
        samples = self.backend.sample()
        attempts = self.runtime.attempts()
        owners = self.owners.owners(
            (p.pid for s in samples for p in s.processes),
            (a.container_id for a in attempts),
        )
        gpus = tuple(_owned(s, owners) for s in samples)
        self.readings.sampled(gpus, self._clock())
        return gpus, attempts

    # ------------------------------------------------------------ output

    def _send_logs(self, req: LogRequest, flow: LogFlow) -> None:
        """Send an attempt's output from its file; with ``follow``, until the attempt ends;
        within the request's window (``flow``), until it is stopped."""
        try:
            path = self.runtime.log_path(req.job_id, req.attempt)
            while not path.exists() and (
                self.runtime.is_pending(req.job_id, req.attempt)
                or self.runtime.is_running(req.job_id, req.attempt)
            ):
                if flow.pause(0.05):
                    return
            if not path.exists():
                self.link.send_log(
                    req.request_id,
                    error=f"no output is kept for job {req.job_id} "
                    f"attempt {req.attempt} on node {self.config.node}",
                )
                return
            offset = 0
            with path.open("rb") as live:
                while not flow.stopped:
                    data = live.read(65536)
                    if data:
                        if not flow.send(len(data)):
                            return
                        offset += len(data)
                        self.link.send_log(req.request_id, data)
                    elif req.follow and self.runtime.is_running(req.job_id, req.attempt):
                        flow.pause(0.05)
                    else:
                        break
            with path.open("rb") as final:  # the complete output replaces the live file at the end
                final.seek(offset)
                while data := final.read(65536):
                    if not flow.send(len(data)):
                        return
                    self.link.send_log(req.request_id, data)
            self.link.send_log(req.request_id, eof=True)
        finally:
            self._logs.pop(req.request_id, None)


def _health(beat: Heartbeat) -> tuple[object, ...]:
    """What of a heartbeat is sent at once when it changes: GPU errors and engine health."""
    errors = tuple((g.index, g.error) for g in beat.gpus if g.error)
    return (beat.engine_healthy, beat.engine_error, errors)


def _owned(sample: GpuTelemetry, owners: dict[int, str]) -> GpuTelemetry:
    """The sample with each process's job (display id) where its pid belongs to one."""
    processes = tuple(replace(p, job_id=owners.get(p.pid, "")) for p in sample.processes)
    return replace(sample, processes=processes)
