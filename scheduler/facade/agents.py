"""AgentService: one stream per agent (``AgentHub``), its heartbeats, events and log data."""

from __future__ import annotations

import asyncio
import time

from rota.messages import (
    AgentEvent,
    AgentOrder,
    Hello,
    JobCommand,
    JobRequeue,
    LogData,
    Pong,
    SessionOutput,
    StepCancel,
    StepEnd,
    StepOutput,
    StepStart,
)
from rota.scheduler.agent_hub import AgentHub, AgentSession, LogRelay
from rota.scheduler.core.errors import AuthError
from rota.scheduler.core.liveness import telemetry_period
from rota.scheduler.core.services import Services
from rota.scheduler.core.steps import Beat, CoreSteps, ReceivedBeat, ReceivedEvent
from rota.scheduler.core_thread import Executor
from rota.scheduler.facade.injob import InJobFacade
from rota.scheduler.intake import EventIntake, TelemetryIntake
from rota.scheduler.pass_loop import PassLoop
from rota.scheduler.session_relay import SessionRelay
from rota.scheduler.step_relay import StepRelay


class AgentsFacade:
    """What an agent's stream says, on receipt (event loop): nothing here waits for the core
    thread but the hello."""

    def __init__(
        self,
        services: Services,
        core: Executor,
        steps: CoreSteps,
        hub: AgentHub,
        logs: LogRelay,
        passes: PassLoop,
        telemetry: TelemetryIntake,
        events: EventIntake,
        step_relay: StepRelay,
        sessions: SessionRelay,
        injob: InJobFacade,
    ) -> None:
        self.services = services
        self.core = core
        self.steps = steps
        self.hub = hub
        self.logs = logs
        self.passes = passes
        self.telemetry = telemetry
        self.events = events
        self.sessions = sessions
        self.step_relay = step_relay
        self.injob = injob
        self._requeues: set[asyncio.Task[None]] = set()

    async def agent_connect(self, hello: Hello, peer: str = "") -> AgentSession:
        """Authenticate and reconcile; the new session replaces any older one of that node.
        A refused hello is recorded in the audit log."""
        session = self.hub.new_session(
            hello.node_name, peer, hello.dials_forwards, hello.log_windows
        )
        period = telemetry_period(self.services.config, self.hub.joined_count(hello.node_name))
        try:
            orders = await self.core.background(self.steps.hello, hello, session.id, period)
        except AuthError as exc:
            await self.hub.record(session.refusal("hello", "", str(exc)))
            raise
        self.hub.attach(session)
        self.hub.dispatch(orders)
        self.passes.want()
        return session

    def agent_heartbeat(self, session: AgentSession, beat: Beat) -> None:
        """Stamp liveness, answer with a pong, and buffer the telemetry for the next batch.
        ``beat`` may be a call that decodes the wire message: it then runs on the core thread,
        and not at all for telemetry that is shed."""
        received = self.services.liveness.stamp(session.node, session.id)
        session.outbox.put_nowait(self._pong())
        self.telemetry.add(ReceivedBeat(session.node, session.id, beat, received))

    def agent_keepalive(self, session: AgentSession) -> None:
        """Stamp liveness and answer; no core-thread work."""
        self.services.liveness.stamp(session.node, session.id)
        session.outbox.put_nowait(self._pong())

    def _pong(self) -> Pong:
        """A pong with the telemetry period for the nodes connected now."""
        return Pong(time.time(), telemetry_period(self.services.config, len(self.hub)))

    def agent_event(self, session: AgentSession, event: AgentEvent) -> None:
        """Stamp liveness and queue the event (``EventIntake``)."""
        self.services.liveness.stamp(session.node, session.id)
        self.events.add(ReceivedEvent(session.node, session.id, session.peer, event))

    def agent_log_data(self, session: AgentSession, data: LogData) -> None:
        """Stamp liveness and hand output to the ``glogs`` stream that asked this node for it
        (output for a request made of another node is refused and recorded)."""
        self.services.liveness.stamp(session.node, session.id)
        self.logs.deliver(session, data)

    def agent_session_output(self, session: AgentSession, out: SessionOutput) -> None:
        """Stamp liveness and hand an interactive session's output to its client (output for
        a session opened on another node is refused and recorded)."""
        self.services.liveness.stamp(session.node, session.id)
        self.sessions.deliver(session, out)

    def agent_step_start(self, session: AgentSession, start: StepStart) -> None:
        """Stamp liveness and start the srun step the node asks for (``StepRelay``)."""
        self.services.liveness.stamp(session.node, session.id)
        self.step_relay.start(session, start)

    def agent_job_requeue(self, session: AgentSession, req: JobRequeue) -> None:
        """Stamp liveness and requeue the job ``scontrol requeue`` ran in (on a task of its
        own: the core thread decides whether this node may ask, ``authz.may_requeue_itself``)."""
        self.services.liveness.stamp(session.node, session.id)
        task = asyncio.create_task(self._requeue(session.node, req))
        self._requeues.add(task)
        task.add_done_callback(self._requeues.discard)

    async def _requeue(self, node: str, req: JobRequeue) -> None:
        orders = await self.core.call(self.steps.requeue_itself, node, req.job_id, req.attempt)
        self.hub.dispatch(orders)
        self.passes.want()

    def agent_job_command(self, session: AgentSession, cmd: JobCommand) -> None:
        """Stamp liveness and answer ``sbatch`` or ``scancel`` inside a job (``InJobFacade``,
        on a task of its own)."""
        self.services.liveness.stamp(session.node, session.id)
        self.injob.start(session, cmd)

    def agent_step_data(
        self, session: AgentSession, data: StepOutput | StepEnd | StepCancel
    ) -> None:
        """Stamp liveness; a step's output or end from a node of the step, or the asking
        node's cancel."""
        self.services.liveness.stamp(session.node, session.id)
        if isinstance(data, StepCancel):
            self.step_relay.cancel(session, data)
        else:
            self.step_relay.deliver(session, data)

    def agent_sent(self, session: AgentSession, order: AgentOrder) -> None:
        """``order`` was written to ``session``'s stream (a step's output leaves its node's
        window then)."""
        if isinstance(order, StepOutput):
            self.step_relay.sent(session, order)

    async def agent_gone(self, session: AgentSession) -> None:
        self.step_relay.gone(session)
        self.hub.detach(session)
        await self.core.background(self.services.agents.disconnected, session.node, session.id)
        self.passes.want()
