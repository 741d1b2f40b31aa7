"""gcontrol's per-job actions: hold, release, requeue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from rota.scheduler.cluster.model import REVOKED_HOLD, HistoryKind, JobEvent, JobRecord
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.authz import hold_kind, hold_reason
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.lifecycle import Lifecycle, Orders
from rota.scheduler.core.lookup import CancelResult, JobLookup
from rota.scheduler.core.model import ClusterModel
from rota.states import JobState

ACTIONS = ("hold", "release", "requeue")


class ControlService:
    """Hold, release and requeue jobs by display id (``123`` names every task of array 123).
    Each action changes new records (``JobLookup.act_on``), committed before they replace the
    model's."""

    def __init__(
        self,
        model: ClusterModel,
        lookup: JobLookup,
        lifecycle: Lifecycle,
        revoked: Callable[[str], bool] = lambda user: False,
    ) -> None:
        self.model = model
        self.lookup = lookup
        self.lifecycle = lifecycle
        self.revoked = revoked  # whether a user is revoked: their jobs are not released

    def hold_revoked(self, user: str) -> int:
        """Hold every pending job of revoked ``user`` (reason UserRevoked; one an admin holds
        keeps that hold); how many were held. Commit, then swap: a failed commit raises and
        holds none in the model."""
        held = [
            replace(j)
            for j in self.model.jobs.values()
            if j.user == user
            and j.state is JobState.PENDING
            and j.held not in ("admin", REVOKED_HOLD)
        ]
        if held:
            self.model.commit(held, [self.lifecycle.hold_revoked(j) for j in held])
            self.model.bump()
        return len(held)

    def control(
        self, action: str, display_ids: Sequence[str], user: str, admin: bool = False
    ) -> tuple[list[CancelResult], Orders]:
        """Apply ``action`` to each id; a result per id says whether it applied and why not.
        A hold by an ``admin`` of another user's job is an admin hold (``access.hold_kind``)."""
        handlers = {"hold": self._hold, "release": self._release, "requeue": self._requeue}
        handler = handlers.get(action)
        if handler is None:
            raise UserError(f"action: {action!r} is not one of {', '.join(ACTIONS)}")
        if not display_ids:
            raise UserError(f"ids: name at least one job to {action}")
        who = Principal(user, admin)
        return self.lookup.act_on(
            display_ids, lambda job, events, orders: handler(job, who, events, orders)
        )

    def _hold(self, job: JobRecord, who: Principal, events: list[JobEvent], orders: Orders) -> str:
        if job.state is not JobState.PENDING:
            return f"is {job.state.value}; only pending jobs can be held"
        if job.held:
            return "is already held"
        job.held = hold_kind(who, job)
        job.reason = hold_reason(job.held)  # shown at once, not after the next pass
        by = f"an admin ({who.user})" if job.held == "admin" else who.user
        events.append(self.lifecycle.note(job, HistoryKind.INFO, f"held by {by}"))
        return ""

    def _release(
        self, job: JobRecord, who: Principal, events: list[JobEvent], orders: Orders
    ) -> str:
        if not job.held:
            return "is not held"
        if self.revoked(job.user):
            return f"belongs to {job.user}, who is revoked; gadmin user token {job.user} first"
        job.held = ""
        events.append(self.lifecycle.note(job, HistoryKind.INFO, f"released by {who.user}"))
        return ""

    def _requeue(
        self, job: JobRecord, who: Principal, events: list[JobEvent], orders: Orders
    ) -> str:
        why = f"requeued by {who.user}"
        if job.state in (JobState.CONFIGURING, JobState.RUNNING):
            event, kills = self.lifecycle.stop(job, JobState.PENDING, why)
            events.append(event)
            orders.extend(kills)
            return ""
        if job.state.terminal:
            events.append(self.lifecycle.transition(job, JobState.PENDING, why))
            job.allocation, job.reason, job.exit_code = [], "", None
            job.start_time = job.end_time = None
            return ""  # back in the model once committed
        return f"is {job.state.value}; it cannot be requeued now"
