"""What every part of the engine facade works with (``Engine.__init__`` sets them)."""

from __future__ import annotations

from collections.abc import Callable

from rota.scheduler.agent_hub import AgentHub, LogRelay
from rota.scheduler.core.services import Services
from rota.scheduler.core.steps import CoreSteps
from rota.scheduler.core_thread import Executor
from rota.scheduler.intake import EventIntake, TelemetryIntake
from rota.scheduler.pass_loop import PassLoop


class Parts:
    """The services, the executor that runs them, the multi-service steps, the agent hub and
    its log relay, the pass loop and the intake."""

    services: Services
    core: Executor
    steps: CoreSteps
    hub: AgentHub
    logs: LogRelay
    passes: PassLoop
    telemetry: TelemetryIntake
    events: EventIntake
    on_reservations: Callable[[], None] | None  # told after a reservation changed (the clock)
