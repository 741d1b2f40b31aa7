"""gcontrol's per-job actions: hold, release, requeue."""

from __future__ import annotations

from collections.abc import Sequence

from rota.scheduler.cluster.model import JobEvent, JobRecord
from rota.scheduler.core.base import CancelResult, Orders, UserError
from rota.scheduler.core.planning import PlanningCore
from rota.states import JobState

ACTIONS = ("hold", "release", "requeue")


class ControlCore(PlanningCore):
    """Hold, release and requeue jobs by display id (``123`` names every task of array 123)."""

    def control(
        self, action: str, display_ids: Sequence[str], user: str
    ) -> tuple[list[CancelResult], Orders]:
        """Apply ``action`` to each id; a result per id says whether it applied and why not."""
        if action not in ACTIONS:
            raise UserError(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
        handler = getattr(self, f"_action_{action}")
        return self._act_on(
            display_ids, lambda job, events, orders: handler(job, user, events, orders)
        )

    def _action_hold(
        self, job: JobRecord, user: str, events: list[JobEvent], orders: Orders
    ) -> str:
        if job.state is not JobState.PENDING:
            return f"is {job.state.value}; only pending jobs can be held"
        if job.held:
            return "is already held"
        job.held = "user"
        events.append(self._note(job, "info", f"held by {user}"))
        return ""

    def _action_release(
        self, job: JobRecord, user: str, events: list[JobEvent], orders: Orders
    ) -> str:
        if not job.held:
            return "is not held"
        job.held = ""
        events.append(self._note(job, "info", f"released by {user}"))
        return ""

    def _action_requeue(
        self, job: JobRecord, user: str, events: list[JobEvent], orders: Orders
    ) -> str:
        why = f"requeued by {user}"
        if job.state in (JobState.CONFIGURING, JobState.RUNNING):
            events.append(self._transition(job, JobState.COMPLETING, why))
            job.stop_state = JobState.PENDING.value
            orders.extend(self._kill_orders(job, why))
            return ""
        if job.state.terminal:
            events.append(self._transition(job, JobState.PENDING, why))
            job.allocation, job.reason, job.exit_code = [], "", None
            job.start_time = job.end_time = None
            self.jobs[job.id] = job
            return ""
        return f"is {job.state.value}; it cannot be requeued now"
