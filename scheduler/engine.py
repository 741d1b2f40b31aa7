"""The engine: a thin facade over the scheduler's parts, one method per RPC.

Every call a principal makes takes its ``Principal`` and is decided by ``core.authz``; the edges
(gRPC servicers, the web API) only authenticate and translate. The RPC methods live by service
in ``scheduler/facade/``; the parts they use:

- ``Executor`` (``core_thread``): runs service calls on the core thread (requests before queued
  background work: telemetry, job events, passes, ticks, hellos) and the policy thread;
- ``CoreSteps`` (``core/steps``): the core-thread steps that span several services;
- ``AgentHub`` (``agent_hub``): agent sessions, order routing, the log relay;
- ``StepRelay`` (``step_relay``): srun steps, from the node that asks to the step's nodes;
- ``PassLoop`` (``pass_loop``): wanting, running and applying passes;
- ``TelemetryIntake`` and ``EventIntake`` (``intake``), ``LivenessWatch`` (``liveness_watch``).

Services commit before they return orders, so an order never goes out for an uncommitted
change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rota.scheduler.agent_hub import AgentHub, LogRelay
from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core.liveness import telemetry_period
from rota.scheduler.core.mail import Mail
from rota.scheduler.core.notifications import Delivery
from rota.scheduler.core.services import Services
from rota.scheduler.core.steps import CoreSteps
from rota.scheduler.core_thread import CoreExecutor, Executor
from rota.scheduler.facade.agents import AgentsFacade
from rota.scheduler.facade.forwards import ForwardFacade
from rota.scheduler.facade.injob import InJobFacade
from rota.scheduler.facade.interactive import InteractiveFacade
from rota.scheduler.facade.jobs import JobsFacade
from rota.scheduler.facade.nodes import NodesFacade
from rota.scheduler.facade.partitions import PartitionsFacade
from rota.scheduler.facade.reservations import ReservationsFacade
from rota.scheduler.facade.users import UsersFacade
from rota.scheduler.intake import EventIntake, TelemetryIntake
from rota.scheduler.large_requests import LargeCancels, LargeSubmissions
from rota.scheduler.liveness_watch import LivenessWatch
from rota.scheduler.metrics_sample import ClusterSample, TelemetrySample, sample
from rota.scheduler.pass_loop import PassLoop, PassObserver
from rota.scheduler.session_relay import SessionRelay
from rota.scheduler.step_relay import StepRelay


class Engine:
    """The facade the servicers, the web API and the daemon's periodic work call: one part per
    gRPC service (``jobs``, ``nodes``, ``partitions``, ``reservations``, ``users``,
    ``agents``, ``interactive``), each with one method per RPC. ``executor``: where service calls run
    (default: the core and policy threads)."""

    def __init__(
        self,
        services: Services,
        observer: PassObserver | None = None,
        on_reservations: Callable[[], None] | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.services = services
        self.core = core = executor if executor is not None else CoreExecutor()
        self.steps = steps = CoreSteps(services)
        self.users = UsersFacade(services, core, steps)
        self.hub = hub = AgentHub(self.users.record)
        self.logs = logs = LogRelay(hub)
        self.sessions = sessions = SessionRelay(hub)
        self.passes = PassLoop(
            core, services.model, services.planner, services.policy, hub.dispatch, observer
        )
        self.telemetry = TelemetryIntake(core, self.steps, self.passes.want)
        self.events = EventIntake(core, self.steps, hub.dispatch, self.passes.want)
        tick_interval = services.config.tick_interval
        self.liveness = LivenessWatch(core, services.agents, tick_interval, self._lost)
        self.large = LargeSubmissions(services.jobs, core.call)
        self.cancels = LargeCancels(services.jobs, core.call, hub.dispatch)
        passes = self.passes
        self.jobs = JobsFacade(services, core, steps, hub, logs, passes, self.large, self.cancels)
        self.nodes = NodesFacade(services, core, steps, hub, passes)
        self.partitions = PartitionsFacade(services, core, passes)
        self.reservations = ReservationsFacade(services, core, steps, passes, on_reservations)
        self.step_relay = StepRelay(hub, core, services.job_steps)
        self.agents = AgentsFacade(
            services,
            core,
            steps,
            hub,
            logs,
            passes,
            self.telemetry,
            self.events,
            self.step_relay,
            sessions,
            InJobFacade(services, core, steps, self.jobs),
        )
        self.interactive = InteractiveFacade(services, core, sessions, logs)
        self.forwards = ForwardFacade(services, core, sessions)

    def start(self) -> None:
        self.passes.start()
        self.liveness.start()

    async def stop(self) -> None:
        """Finish the pass in progress and the queued job events, then stop the threads."""
        await self.liveness.stop()
        await self.passes.stop()
        await self.telemetry.stop()
        await self.events.stop()
        await self.hub.drain()
        self.hub.close_all()
        self.core.shutdown()
        self.large.shutdown()

    async def tick(self) -> None:
        """Periodic housekeeping (APScheduler calls this): lost nodes and idle jobs, stale
        streams, then a pass."""
        await self._lost(await self.core.background(self.steps.tick))

    async def _lost(self, orders: Orders) -> None:
        """Send ``orders``, close the streams of nodes the model no longer counts as connected
        (a frozen agent that wakes up must say hello again), and want a pass."""
        self.hub.dispatch(orders)
        before = self.hub.sessions()  # newer sessions are checked next time
        self.hub.close_stale(await self.core.background(self.services.nodes.sessions), before)
        self.passes.want()

    async def metrics_sample(self) -> ClusterSample:
        """What the model and the heartbeat path show now, for a /metrics scrape."""
        cluster = await self.core.call(sample, self.services)
        buffer = self.telemetry.buffer
        period = telemetry_period(self.services.config, len(self.hub))
        return replace(cluster, telemetry=TelemetrySample(buffer.superseded, len(buffer), period))

    async def claim_notifications(self, limit: int) -> list[Delivery]:
        """Up to ``limit`` job-end webhooks due now (the notifier posts them)."""
        return await self.core.background(self.services.notifications.claim, limit)

    async def claim_mails(self, limit: int) -> list[Mail]:
        """Up to ``limit`` mails due now, jobs' and reservations' (the mailer sends them)."""
        return await self.core.background(self.services.mail.claim, limit)

    async def mail_result(self, mail: Mail, error: str) -> None:
        """Record how a send went: sent, or failed (retried later or given up)."""
        mails = self.services.mail
        await self.core.background(mails.failed if error else mails.sent, mail)

    async def notification_result(self, delivery: Delivery, status: int, error: str) -> None:
        """Record how a post went: delivered, or failed (retried later or given up)."""
        notifications = self.services.notifications
        if error:
            await self.core.background(notifications.failed, delivery)
        else:
            await self.core.background(notifications.delivered, delivery, status)
