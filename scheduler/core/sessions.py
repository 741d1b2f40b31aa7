"""Interactive sessions (grun, gattach, rota forward/proxy) as the core sees them: the job a
session enters once ``authz`` allows it, the job's state while a session waits for it, the
record of who entered a job (a job event and an audit entry), and idle reclamation.

Idle reclamation: a running grun session with GPUs is idle while no client is attached and
its GPUs stay at 0 % utilisation (``GpuHealth.last_active``, on fresh telemetry of real GPUs
only). Idle for ``interactive_idle_after`` it ends TIMEOUT with reason ``Idle``; it is warned
``interactive_idle_warning`` before (a job warning: gqueue's WARN, the page, the events; and
the job's ``idle_warning`` and ``idle_end`` webhooks). A client attaching starts the idle
stretch again. Both settings are per partition where its
settings set them (``SessionRuleBook``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from rota.jobmail import IDLE_WARNINGS
from rota.scheduler.cluster.gpus import human_duration
from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord
from rota.scheduler.cluster.users import AuditEntry, Principal
from rota.scheduler.core import authz
from rota.scheduler.core.errors import NotFound, UserError
from rota.scheduler.core.gpus import GpuHealth
from rota.scheduler.core.lifecycle import Lifecycle, Orders
from rota.scheduler.core.lookup import JobLookup
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.notifications import IdleNotice, idle_event
from rota.scheduler.core.session_rules import SessionRuleBook
from rota.scheduler.core.users import UsersService
from rota.states import JobState

IDLE = "Idle"  # the reason of a session ended by idle reclamation (state TIMEOUT)
IDLE_WARNING = IDLE_WARNINGS[0]  # how an idle warning starts (shown again on the next attach)


class SessionService:
    """Core-thread steps of interactive sessions."""

    def __init__(
        self,
        model: ClusterModel,
        lookup: JobLookup,
        lifecycle: Lifecycle,
        users: UsersService,
        gpus: GpuHealth,
        rules: SessionRuleBook,
        clock: Callable[[], float],
    ) -> None:
        self.model = model
        self.lookup = lookup
        self.lifecycle = lifecycle
        self.users = users
        self.gpus = gpus
        self.rules = rules
        self.clock = clock
        self._clients: dict[int, int] = {}  # job id -> clients attached now
        self._left: dict[int, float] = {}  # job id -> when its last client went away
        self._warned: dict[int, float] = {}  # job id -> the idle stretch it was warned for

    def target(self, display_id: str, who: Principal, kind: str) -> JobRecord:
        """The job (a copy) ``who`` opens a ``kind`` session in: AccessDenied unless its owner
        or an admin, UserError when grun's session is asked of a job grun did not start."""
        jobs = self.lookup.resolve(display_id)
        if len(jobs) != 1:
            if not jobs:
                raise NotFound(f"job {display_id} does not exist")
            raise UserError(f"id: {display_id} is an array job; name one task like {display_id}_0")
        job = jobs[0]
        authz.require(f"job.{kind}", who, job)
        if kind == "attach" and not job.spec.interactive:
            raise UserError(
                f"job_id: job {display_id} is a batch job, not a grun session; gattach "
                f"{display_id} opens a shell in it"
            )
        return job

    def current(self, job: JobRecord) -> JobRecord:
        """The job's record now (a copy): live in the model, else as stored."""
        live = self.model.jobs.get(job.id)
        if live is not None:
            return self.lookup.copy(live)
        found = self.lookup.resolve(job.display_id)
        return found[0] if found else job

    def entered(self, job: JobRecord, who: Principal, kind: str, node: str, peer: str) -> None:
        """Record that ``who`` opened a ``kind`` session in ``job`` on ``node``: an event in
        the job's history and an entry in the audit log."""
        what = {"exec": "gattach", "forward": "port forward", "attach": "grun attach"}[kind]
        text = f"{what} by {who.user} on {node}"
        event = self.lifecycle.note(job, HistoryKind.INFO, text)
        self.model.commit([], [event])
        self.users.record(
            AuditEntry(
                time=self.clock(),
                user=who.user,
                action=f"Interact/{kind}",
                target=f"id={job.display_id} node={node}",
                peer=peer,
                detail=text,
            )
        )

    def attached(self, job_id: int) -> None:
        """A client's session in the job opened."""
        self._clients[job_id] = self._clients.get(job_id, 0) + 1

    def detached(self, job_id: int) -> None:
        """A client's session in the job ended: the idle stretch starts now."""
        left = self._clients.get(job_id, 0) - 1
        if left > 0:
            self._clients[job_id] = left
        else:
            self._clients.pop(job_id, None)
        self._left[job_id] = self.clock()

    def reclaim(self) -> Orders:
        """Warn, then end, idle sessions (module doc); the kill orders."""
        jobs_now = self.model.jobs
        for gone in set(self._left) - set(jobs_now):
            self._left.pop(gone, None)
            self._warned.pop(gone, None)
        now = self.clock()
        changed: list[JobRecord] = []
        events: list[JobEvent] = []
        orders: Orders = []
        warned: dict[int, float] = {}
        for job in list(jobs_now.values()):
            if not job.spec.interactive or job.state is not JobState.RUNNING or not job.spec.gpus:
                continue
            if self._clients.get(job.id):
                continue
            rules = self.rules.rules(job.spec.partition, job.spec.qos)
            limit, lead = rules.idle_after, rules.idle_warning
            if not limit:
                continue
            active = self.gpus.last_active(job, now)
            if active is None:
                continue
            since = max(active, self._left.get(job.id, 0.0))
            idle = now - since
            job = dataclasses.replace(job)  # committed, then swapped in
            if idle >= limit:
                why = (
                    f"no client attached and its GPUs idle (0% utilisation) for "
                    f"{human_duration(idle)} ({rules.idle_after_from})"
                )
                event, kills = self.lifecycle.stop(job, JobState.TIMEOUT, why)
                job.reason = IDLE
                notice = IdleNotice("idle_end", "end", since, now, rules.idle_after_from, why)
                events.append(idle_event(event, job, notice))
                orders.extend(kills)
                changed.append(job)
            elif lead and idle >= limit - lead and self._warned.get(job.id) != since:
                warned[job.id] = since
                text = (
                    f"{IDLE_WARNING}no client attached and GPUs at 0% for "
                    f"{human_duration(idle)}; it ends (Idle) after {human_duration(limit)} "
                    f"idle unless attached or used"
                )
                at = since + limit
                notice = IdleNotice("idle_warning", "end", since, at, rules.idle_after_from, text)
                events.append(idle_event(self.lifecycle.warn(job, text), job, notice))
                changed.append(job)
        if changed:
            self.model.commit(changed, events)
            self._warned.update(warned)
            self.model.bump()
        return orders
