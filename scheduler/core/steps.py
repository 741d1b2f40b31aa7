"""Core-thread steps that span several services: each is one hop of the engine's parts.

Every method runs on the core thread (the engine's executor puts it there; in-process tests call
them directly). Permission decisions are ``authz``'s; these only ask it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

from rota.jobspec import JobSpec
from rota.messages import AgentEvent, EventAck, Heartbeat, Hello
from rota.scheduler.cluster.model import HistoryKind, JobRecord, NodeState
from rota.scheduler.cluster.reservation import Reservation
from rota.scheduler.cluster.status import NodeStatus
from rota.scheduler.cluster.users import AuditEntry, Principal, UserRecord
from rota.scheduler.core import authz
from rota.scheduler.core.audit import agent_refusal
from rota.scheduler.core.control import ACTIONS as CONTROL_ACTIONS
from rota.scheduler.core.errors import AccessDenied, NotFound, UserError
from rota.scheduler.core.injob import waited_exit
from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core.liveness import Stamp
from rota.scheduler.core.lookup import CancelResult
from rota.scheduler.core.scancel_line import ScancelLine
from rota.scheduler.core.services import Services
from rota.scheduler.core.submission import SubmitItem
from rota.scheduler.core.unused_notice import unused_words

log = logging.getLogger("rota.scheduler")

# A heartbeat as received: decoded already, or a call that decodes it (the wire message's).
Beat: TypeAlias = Heartbeat | Callable[[], Heartbeat]


@dataclass(frozen=True, slots=True)
class ReceivedBeat:
    """A heartbeat of stream ``session`` of ``node``, received at ``received``."""

    node: str
    session: int
    beat: Beat
    received: Stamp

    def decoded(self) -> Heartbeat:
        return self.beat if isinstance(self.beat, Heartbeat) else self.beat()


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    """A job event of stream ``session`` of ``node`` (from ``peer``)."""

    node: str
    session: int
    peer: str
    event: AgentEvent


class CoreSteps:
    """The multi-service steps of the engine, over ``services``."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def tick(self) -> Orders:
        """Housekeeping: lost nodes and idle jobs, accounting, reservations, tokens, audit."""
        services = self.services
        orders = services.agents.lost_nodes() + services.gpus.idle_jobs()
        orders += services.sessions.reclaim()
        services.accounting.tick()
        now = services.reservations.clock()
        services.reservations.advance(now)
        for r in services.noshow.step(now):
            self._unused(r, now)
        services.users.refresh()
        services.users.prune_audit()
        return orders

    def _unused(self, r: Reservation, now: float) -> None:
        """Record that the no-show rule gave ``r`` back: the audit log (``gadmin audit``) and
        the scheduler's log; its owners see it in ``greserve show`` and, with a mail relay, by
        mail (queued with the give-back, ``UnusedNotice``)."""
        why, done = unused_words(r, now)
        log.warning("reservation %s given back: %s; %s", r.name, why, done)
        entry = AuditEntry(now, "", "reservation unused", f"name={r.name}", "scheduler", True)
        self.services.users.record(replace(entry, detail=f"{why}; {done}"))

    def hello(self, hello: Hello, session: int, period: float | None = None) -> Orders:
        """Authenticate and reconcile a node's new stream; ``period``: the telemetry period."""
        services = self.services
        orders = services.agents.hello(hello, session, period)
        services.gpus.node_joined(services.model.nodes[hello.node_name])
        return orders

    def heartbeat(
        self, node: str, session: int, beat: Heartbeat, received: Stamp | None = None
    ) -> bool:
        """Apply one heartbeat received at ``received`` (default now): True when what the
        policy sees of the node changed. The one place applied telemetry is handed to its
        observers: GPU health, then anything that accounts per node or job from telemetry."""
        services = self.services
        changed = services.agents.heartbeat(node, session, beat, received)
        services.meter.observe(node, session)
        return services.gpus.observe(node, session) or changed

    def telemetry(self, batch: Sequence[ReceivedBeat]) -> bool:
        """Apply a batch of heartbeats; True when what the policy sees changed."""
        changed = False
        for item in batch:
            beat = item.decoded()
            changed = self.heartbeat(item.node, item.session, beat, item.received) or changed
        return changed

    def events(self, batch: Sequence[ReceivedEvent]) -> tuple[Orders, bool]:
        """Apply job events in one transaction: the orders they cause, and whether a pass is
        wanted (anything but a start frees or changes resources). A report about a job its
        node does not run (``authz.may_report``) is refused, acknowledged and recorded. When
        the transaction fails nothing is acknowledged (the agents resend)."""
        services = self.services
        orders: Orders = []
        wanted = False
        try:
            with services.model.together():
                for item in batch:
                    event = item.event
                    try:
                        job = services.model.jobs.get(event.job_id)
                        refused = authz.may_report(item.node, job, event.attempt)
                        if refused:
                            target = f"job={event.job_id}"
                            entry = agent_refusal(
                                item.node, item.peer, "job_event", target, refused, time.time()
                            )
                            services.users.record(entry)
                            orders.append((item.node, EventAck(event.job_id, event.attempt)))
                            continue
                        orders += services.agents.event(item.node, item.session, event)
                    except Exception:
                        log.exception("applying %s of job %d failed", event.kind, event.job_id)
                    wanted = wanted or event.kind != "STARTED"
        except Exception:
            log.exception("storing %d job event(s) failed; none is acknowledged", len(batch))
            return [], True
        return orders, wanted

    def authorize_submit(self, items: Sequence[SubmitItem], who: Principal) -> list[SubmitItem]:
        """The items with their accounts resolved; AccessDenied naming the first item and field
        ``who`` may not ask for (checked per item, before any array is expanded)."""
        allowed = self.services.config.user_qos
        resolved = []
        for i, item in enumerate(items):
            spec = replace(item.spec, account=authz.job_account(who, item.spec))
            field_name, why = authz.may_submit(who, spec, allowed)
            if why:
                where = f"{item.source}: " if item.source else f"items[{i}]."
                raise AccessDenied(f"{where}{field_name}: {why}")
            resolved.append(replace(item, spec=spec))
        return resolved

    def check_acts(self, ids: Sequence[str], who: Principal, action: str) -> None:
        """AccessDenied naming the first job of ``ids`` that ``who`` may not ``action``
        (cancel, hold, release, requeue); malformed ids are left to the action's result."""
        if who.admin:
            return
        for display_id in ids:
            try:
                jobs = self.services.lookup.resolve(display_id)
            except UserError:
                continue
            for job in jobs:
                authz.require(f"job.{action}", who, job)

    def control(
        self, action: str, ids: Sequence[str], who: Principal
    ) -> tuple[list[CancelResult], Orders]:
        """Hold, release or requeue as ``who`` (AccessDenied as ``check_acts``); UserError
        naming ``action`` when it is none of those."""
        if action not in CONTROL_ACTIONS:
            raise UserError(f"action: {action!r} is not one of {', '.join(CONTROL_ACTIONS)}")
        self.check_acts(ids, who, action)
        return self.services.control.control(action, ids, who.user, who.admin)

    def requeue_itself(self, node: str, job_id: int, attempt: int) -> Orders:
        """``scontrol requeue`` inside the job: requeue it as its user would, when ``node`` runs
        its current attempt (``authz.may_requeue_itself``); otherwise logged and ignored."""
        lookup = self.services.lookup
        job = next((j for j in lookup.resolve(str(job_id)) if j.id == job_id), None)
        why = authz.may_requeue_itself(node, job, attempt)
        if why or job is None:
            log.warning("requeue refused: %s", why)
            return []
        results, orders = self.services.control.control("requeue", [job.display_id], job.user)
        for result in results:
            if not result.ok:
                log.info("job %s: scontrol requeue: %s", job.display_id, result.message)
        return orders

    def command_owner(
        self, node: str, peer: str, tool: str, job_id: int, attempt: int
    ) -> tuple[str, JobSpec, Principal]:
        """The display id and spec of the job a command inside it (``sbatch``, ``scancel``)
        came from, and who it acts as (``authz.job_principal``: its owner, never an admin),
        when ``node`` runs its current attempt and the owner may still act
        (``authz.may_command_from_job``); otherwise AccessDenied, recorded in the audit log."""
        services = self.services
        job = services.model.jobs.get(job_id)
        why = authz.may_command_from_job(node, job, attempt)
        owner: UserRecord | None = None
        if not why and job is not None:
            try:
                owner = services.users.get(job.user)
            except NotFound as exc:
                why = str(exc)
            if owner is not None and owner.revoked:
                why = f"user {job.user} is revoked"
        if why or job is None or owner is None:
            entry = agent_refusal(node, peer, tool, f"job={job_id}", why, services.jobs.clock())
            services.users.record(entry)
            raise AccessDenied(why)
        return job.display_id, job.spec, authz.job_principal(owner.principal())

    def scancel_targets(self, who: Principal, line: ScancelLine) -> list[str]:
        """The display ids of ``who``'s live jobs a filtered scancel inside a job cancels;
        AccessDenied when ``-u`` names anyone but ``who`` (``authz.may_pick_jobs_of``)."""
        why = authz.may_pick_jobs_of(who, line.user) if line.user else ""
        if why:
            raise AccessDenied(why)
        default = self.services.partitions.table.default.name
        return line.chosen(self.services.model.jobs.values(), who.user, default)

    def waited(self, who: Principal, display_id: str) -> int | None:
        """sbatch --wait inside a job: the exit code of the job ``display_id`` (an array's
        highest) once it ended, None before; NotFound when it names no job, AccessDenied for
        another user's (``authz.may_wait_for``)."""
        jobs = self.services.lookup.resolve(display_id)
        if not jobs:
            raise NotFound(f"job {display_id} is not known")
        for job in jobs:
            why = authz.may_wait_for(who, job)
            if why:
                raise AccessDenied(why)
        return waited_exit(jobs)

    def command_done(self, entry: AuditEntry, noted: Sequence[str] = ()) -> None:
        """Record a command inside a job in the audit log, and ``entry.detail`` in the events
        of the jobs ``noted`` (display ids: the jobs sbatch submitted)."""
        services = self.services
        services.users.record(entry)
        events = []
        for display_id in noted:
            for job in services.lookup.resolve(display_id):
                events.append(services.jobs.lifecycle.note(job, HistoryKind.INFO, entry.detail))
        if events:
            services.model.commit([], events)

    def log_location(
        self, display_id: str, attempt: int, node: str, who: Principal
    ) -> tuple[JobRecord, str, int]:
        """Where an attempt's output is, once ``who`` may read it (before saying whether there
        is any)."""
        jobs = self.services.jobs
        authz.require("job.read_logs", who, jobs.get(display_id)[0])
        return jobs.location(display_id, attempt, node)

    def revoke(self, name: str) -> UserRecord:
        """Revoke the user's token and hold their pending jobs (UserRevoked)."""
        user = self.services.users.revoke(name)
        self.services.control.hold_revoked(user.name)
        return user

    def drain_node(self, name: str, reason: str, user: str) -> tuple[NodeState, NodeStatus]:
        self.services.nodes.drain(name, reason, user)
        return self.services.nodes.show(name)

    def resume_node(self, name: str, user: str) -> tuple[NodeState, NodeStatus]:
        self.services.nodes.resume(name, user)
        return self.services.nodes.show(name)

    def reservations(self) -> list[tuple[Reservation, list[str]]]:
        """Every reservation with the jobs in it."""
        service = self.services.reservations
        return [(r, service.jobs_of(r.name)) for r in service.all()]

    def reservation(self, name: str) -> tuple[Reservation, list[str]]:
        service = self.services.reservations
        return service.get(name), service.jobs_of(name)
