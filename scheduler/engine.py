"""The engine: the only orchestrator of the scheduler's services, one method per RPC.

It alone decides what runs where. Every service call runs on the core thread (the only thread
that touches the cluster model and the store); ``decide`` and ``explain`` run on the policy
thread; the event loop only routes orders and log data to and from agent streams. Services
commit before they return orders, so an order never goes out for an uncommitted change.
Submitting, listing and heartbeats never wait for a pass: only the short apply step queues
behind them on the core thread. Requests from users go before queued background work
(telemetry, job events, passes, ticks, hellos; scheduler/core_thread.py), and background work
runs in bounded hops, so a request waits for at most one such hop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from rota.messages import (
    AgentEvent,
    AgentOrder,
    EventAck,
    Heartbeat,
    Hello,
    LaunchOrder,
    LogData,
    LogRequest,
    Pong,
)
from rota.scheduler.cluster.accounting import AccountingQuery, FinishedJob, UsageTotal
from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeState
from rota.scheduler.cluster.reservation import Reservation
from rota.scheduler.cluster.status import NodeStatus
from rota.scheduler.cluster.users import AuditEntry, Principal, UserRecord
from rota.scheduler.core import access
from rota.scheduler.core.errors import AccessDenied, AuthError, NotFound, UserError
from rota.scheduler.core.jobs import JobListing, JobPage, SubmitItem, SubmitResult
from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core.liveness import telemetry_period
from rota.scheduler.core.lookup import CancelResult
from rota.scheduler.core.nodes import NodePage, RemoveResult
from rota.scheduler.core.notifications import Delivery
from rota.scheduler.core.reservations import NodeBookings, ReservationRequest, Usage
from rota.scheduler.core.services import Services
from rota.scheduler.core.submission import task_count
from rota.scheduler.core_thread import CoreThread
from rota.scheduler.intake import Beat, ReceivedBeat, TelemetryBuffer
from rota.scheduler.large_requests import LARGE_SUBMISSION, LargeCancels, LargeSubmissions
from rota.scheduler.metrics_sample import ClusterSample, TelemetrySample, sample
from rota.scheduler.policy.explain import Explanation

log = logging.getLogger("rota.scheduler")
T = TypeVar("T")
WATCH_INTERVAL = 0.25  # seconds between looks at a watched job
TELEMETRY_BATCH_DELAY = 0.05  # seconds heartbeats gather before one core-thread hop
TELEMETRY_PER_HOP = 100  # heartbeats decoded and applied per core-thread hop (~0.2 ms each)
EVENTS_PER_HOP = 25  # job events applied (and stored in one transaction) per core-thread hop
NODES_PER_HOP = 100  # nodes of a ListNodes page built per core-thread hop (~0.1-0.2 ms each)
PLACEMENTS_PER_HOP = 50  # placements of a plan committed per core-thread hop
BEHIND_LOG_INTERVAL = 10.0  # seconds between "behind on telemetry" warnings
LIVENESS_MIN_WAIT = 0.05  # seconds: the liveness check never spins


@dataclass(eq=False)
class AgentSession:
    """One live agent stream; ``outbox`` feeds it (None closes it)."""

    node: str
    id: int
    peer: str = ""  # the stream's peer address, for the audit log
    outbox: asyncio.Queue[AgentOrder | None] = field(default_factory=asyncio.Queue)


class PassObserver(Protocol):
    """Told about every scheduling pass (the metrics): how long it took and, for each job it
    launched, how long that job waited since submission."""

    def pass_done(self, seconds: float, queue_waits: Sequence[float]) -> None: ...


class Engine:
    """Async orchestration over the services, used by the servicers and the periodic tick."""

    def __init__(
        self,
        services: Services,
        observer: PassObserver | None = None,
        on_reservations: Callable[[], None] | None = None,
    ) -> None:
        self.services = services
        self.observer = observer
        self.on_reservations = on_reservations  # told after a reservation changed (the clock)
        self._core_thread = CoreThread()
        self._policy_pool = ThreadPoolExecutor(1, thread_name_prefix="rota-policy")
        self._large = LargeSubmissions(services.jobs, self._core)
        self._cancels = LargeCancels(services.jobs, self._core, self.dispatch)
        self._sessions: dict[str, AgentSession] = {}
        self._session_ids = itertools.count(1)
        self._log_ids = itertools.count(1)
        self._log_streams: dict[int, tuple[str, asyncio.Queue[LogData]]] = {}
        self._pass_wanted = asyncio.Event()
        self._pass_task: asyncio.Task[None] | None = None
        self._liveness_task: asyncio.Task[None] | None = None
        self._stopping = False
        self.passes = 0
        self._telemetry = TelemetryBuffer()
        self._telemetry_task: asyncio.Task[None] | None = None
        self._events: list[tuple[AgentSession, AgentEvent]] = []
        self._events_task: asyncio.Task[None] | None = None
        self._recording: set[asyncio.Task[None]] = set()  # refusals being written to the audit
        self._behind_logged = 0.0  # monotonic time of the last "behind" warning
        self._behind_since_log = 0

    @property
    def telemetry_dropped(self) -> int:
        """Heartbeats whose telemetry was shed (a newer one of the node replaced it before the
        core thread applied it) since start: non-zero means the scheduler fell behind."""
        return self._telemetry.superseded

    async def _core(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the core thread as a request: before queued background work."""
        return await asyncio.wrap_future(self._core_thread.submit(functools.partial(fn, *args)))

    async def _background(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the core thread as background work (telemetry, job events, passes,
        ticks, agents' hellos): in order among itself, after queued requests."""
        call = functools.partial(fn, *args)
        return await asyncio.wrap_future(self._core_thread.submit(call, background=True))

    async def _policy(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the policy thread (pure: it reads only the snapshot it is given)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._policy_pool, functools.partial(fn, *args))

    # ------------------------------------------------------------ passes

    def start(self) -> None:
        self._pass_task = asyncio.create_task(self._pass_loop(), name="rota-pass-loop")
        self._liveness_task = asyncio.create_task(self._liveness_loop(), name="rota-liveness")
        self.request_pass()

    async def _liveness_loop(self) -> None:
        """Mark silent nodes DOWN when their timeout runs out, not at the next tick: sleep
        until the first connected node could time out (at most ``tick_interval``), check."""
        config = self.services.config
        while not self._stopping:
            try:
                due = await self._background(self.services.agents.next_timeout)
                if due is not None and due < 0:
                    orders = await self._background(self.services.agents.lost_nodes)
                    self.dispatch(orders)
                    await self._close_stale_sessions()
                    self.request_pass()
                    due = 0.0  # look again at once (after the shortest wait)
            except Exception:
                log.exception("checking for lost nodes failed; retrying")
                due = None
            wait = config.tick_interval if due is None else min(due, config.tick_interval)
            await asyncio.sleep(max(wait, LIVENESS_MIN_WAIT) + LIVENESS_MIN_WAIT)

    def request_pass(self) -> None:
        """Ask for a pass; requests made during a pass coalesce into one more."""
        self._pass_wanted.set()

    async def _pass_loop(self) -> None:
        while not self._stopping:
            await self._pass_wanted.wait()
            if self._stopping:
                return
            self._pass_wanted.clear()
            try:
                await self.run_pass()
            except Exception:
                log.exception("scheduling pass failed; retrying on the next trigger")

    async def run_pass(self) -> None:
        """Snapshot (core thread), decide (policy thread), apply (core thread, at most
        ``PLACEMENTS_PER_HOP`` placements per hop, the plan's remainder last), send orders."""
        began = time.monotonic()
        planner = self.services.planner
        snapshot = await self._background(planner.snapshot)
        plan = await self._policy(self.services.policy.decide, snapshot)
        waits: list[float] = []
        rest = plan.placements
        while len(rest) > PLACEMENTS_PER_HOP:
            part, rest = rest[:PLACEMENTS_PER_HOP], rest[PLACEMENTS_PER_HOP:]
            orders, waited = await self._background(self._launching, planner.place, part)
            waits += waited
            self.dispatch(orders)
        last = replace(plan, placements=rest)
        orders, waited = await self._background(
            self._launching, planner.apply, last, snapshot.version
        )
        waits += waited
        self.passes += 1
        self.dispatch(orders)
        if self.observer is not None:
            self.observer.pass_done(time.monotonic() - began, waits)

    def _launching(self, step: Callable[..., Orders], *args: Any) -> tuple[Orders, list[float]]:
        """Run ``step`` (core thread): its orders and, for each job it launched, how long that
        job waited since submission."""
        orders = step(*args)
        jobs, now = self.services.model.jobs, time.time()
        launched = {o.job_id for _, o in orders if isinstance(o, LaunchOrder)}
        return orders, [now - jobs[i].submit_time for i in launched if i in jobs]

    async def stop(self) -> None:
        """Finish the pass in progress, then stop the loop and the threads."""
        self._stopping = True
        self._pass_wanted.set()
        if self._liveness_task is not None:
            self._liveness_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._liveness_task
        if self._pass_task is not None:
            await self._pass_task
        for task in (self._telemetry_task, self._events_task, *self._recording):
            if task is not None:
                await task
        for session in list(self._sessions.values()):
            session.outbox.put_nowait(None)
        self._core_thread.shutdown()
        self._policy_pool.shutdown(wait=True)
        self._large.shutdown()

    async def tick(self) -> None:
        """Periodic housekeeping (APScheduler calls this): lost nodes and idle jobs, stale
        streams, then a pass."""
        self.dispatch(await self._background(self.tick_step))
        await self._close_stale_sessions()
        self.request_pass()

    def tick_step(self) -> Orders:
        """The core-thread part of ``tick`` (in-process tests call it directly)."""
        services = self.services
        orders = services.agents.lost_nodes() + services.gpus.idle_jobs()
        services.accounting.tick()
        services.reservations.housekeeping()
        services.users.refresh()
        services.users.prune_audit()
        return orders

    async def _close_stale_sessions(self) -> None:
        """Close streams of nodes the model no longer counts as connected (heartbeats stopped,
        or the node was removed): a frozen agent that wakes up must say hello again and be
        reconciled, not carry on over its old stream."""
        before = list(self._sessions.values())  # newer sessions are checked next tick
        live = await self._background(self.services.nodes.sessions)
        for session in before:
            if self._sessions.get(session.node) is session and live.get(session.node) != session.id:
                log.warning("closing the stale stream of node %s", session.node)
                self.disconnect(session.node)

    def disconnect(self, node: str) -> None:
        """End the node's live stream (orders queued before this still go out first)."""
        session = self._sessions.pop(node, None)
        if session is not None:
            session.outbox.put_nowait(None)
            self._fail_log_streams(node)

    def dispatch(self, orders: Orders) -> None:
        """Queue each order on its node's live stream; orders for absent nodes are dropped
        (a reconnecting agent is reconciled from the database instead)."""
        for node, order in orders:
            session = self._sessions.get(node)
            if session is not None:
                session.outbox.put_nowait(order)

    # ------------------------------------------------------------ JobService

    async def submit(
        self, items: Sequence[SubmitItem], who: Principal, test_only: bool
    ) -> list[SubmitResult]:
        """Submit as ``who``: each job's account resolved (``access.job_account``) and the
        items refused as a whole when ``access.may_submit`` refuses one."""
        resolved = self._authorize_submit(items, who)
        if not test_only and task_count(resolved) > LARGE_SUBMISSION:
            results = await self._large.submit(resolved, who.user)
        else:
            results = await self._core(self.services.jobs.submit, resolved, who.user, test_only)
        if not test_only:
            self.request_pass()
        return results

    def _authorize_submit(self, items: Sequence[SubmitItem], who: Principal) -> list[SubmitItem]:
        """The items with their accounts resolved; AccessDenied naming the first item and field
        ``who`` may not ask for (checked per item, before any array is expanded)."""
        allowed = self.services.config.user_qos
        resolved = []
        for i, item in enumerate(items):
            spec = replace(item.spec, account=access.job_account(who, item.spec))
            field_name, why = access.may_submit(who, spec, allowed)
            if why:
                where = f"{item.source}: " if item.source else f"items[{i}]."
                raise AccessDenied(f"{where}{field_name}: {why}")
            resolved.append(replace(item, spec=spec))
        return resolved

    async def cancel(self, ids: Sequence[str], who: Principal, reason: str) -> list[CancelResult]:
        """Cancel as ``who``; AccessDenied (nothing changed) when any id names a job ``who``
        may not cancel. Large cancels run in chunks (``LargeCancels``)."""
        await self._core(self._check_acts, ids, who, "cancel")
        results = await self._cancels.cancel(ids, who.user, reason)
        self.request_pass()
        return results

    async def control(self, action: str, ids: Sequence[str], who: Principal) -> list[CancelResult]:
        """Hold, release or requeue as ``who``; AccessDenied as for ``cancel``."""
        results, orders = await self._core(self._control_step, action, ids, who)
        self.dispatch(orders)
        self.request_pass()
        return results

    def _control_step(
        self, action: str, ids: Sequence[str], who: Principal
    ) -> tuple[list[CancelResult], Orders]:
        self._check_acts(ids, who, action)
        return self.services.control.control(action, ids, who.user, who.admin)

    def _check_acts(self, ids: Sequence[str], who: Principal, action: str) -> None:
        """AccessDenied naming the first job of ``ids`` that ``who`` may not ``action``."""
        if who.admin:
            return
        lookup = self.services.lookup
        for display_id in ids:
            try:
                jobs = lookup.resolve(display_id)
            except UserError:
                continue  # the action's own result names a malformed id
            for job in jobs:
                why = access.may_act(who, job, action)
                if why:
                    raise AccessDenied(why)

    async def list_jobs(self, listing: JobListing, who: Principal) -> JobPage:
        """A page of jobs. For non-admins, other users' jobs only while pending or active
        (their ended jobs are ``gacct``'s, which shows them only to admins), and without
        their environments, mounts and webhook URLs."""
        if not who.admin:
            listing = replace(listing, private_to=who.user)
        page = await self._core(self.services.jobs.list_page, listing)
        return replace(page, jobs=[access.private_view(who, j) for j in page.jobs])

    async def get_job(self, display_id: str, who: Principal) -> tuple[JobRecord, list[JobEvent]]:
        job, events = await self._core(self.services.jobs.get, display_id)
        return access.private_view(who, job), events

    async def watch_job(self, display_id: str, who: Principal) -> AsyncGenerator[JobRecord, None]:
        """The job now and after every change, until it has ended."""
        last = None
        while True:
            job, _events = await self.get_job(display_id, who)
            if job != last:
                yield job
                last = job
            if job.state.terminal:
                return
            await asyncio.sleep(WATCH_INTERVAL)

    async def explain(
        self, display_id: str, who: Principal
    ) -> tuple[JobRecord, Explanation | None, int]:
        """The job, and when pending why it waits (computed on the policy thread) and how many
        jobs are pending."""
        job, snapshot = await self._core(self.services.jobs.explain_target, display_id)
        job = access.private_view(who, job)
        if snapshot is None:
            return job, None, 0
        why = await self._policy(self.services.policy.explain, snapshot, job.id)
        return job, why, len(snapshot.pending)

    async def stream_logs(
        self, display_id: str, attempt: int, follow: bool, who: Principal, node: str = ""
    ) -> AsyncGenerator[bytes, None]:
        """Relay an attempt's output from the agent that ran it (``node``: one rank of a gang;
        default rank 0). NotFound when unreachable; AccessDenied unless ``who`` may read it."""
        job, node, attempt = await self._core(self._log_step, display_id, attempt, node, who)
        session = self._sessions.get(node)
        if session is None:
            raise NotFound(
                f"node {node} that ran job {display_id} is not connected; its output is kept there"
            )
        request_id = next(self._log_ids)
        queue: asyncio.Queue[LogData] = asyncio.Queue()
        self._log_streams[request_id] = (node, queue)
        session.outbox.put_nowait(LogRequest(request_id, job.id, attempt, follow))
        try:
            while True:
                chunk = await queue.get()
                if chunk.error:
                    raise NotFound(chunk.error)
                if chunk.data:
                    yield chunk.data
                if chunk.eof:
                    return
        finally:
            self._log_streams.pop(request_id, None)
            live = self._sessions.get(node)
            if live is not None:
                live.outbox.put_nowait(LogRequest(request_id, cancel=True))

    def _log_step(
        self, display_id: str, attempt: int, node: str, who: Principal
    ) -> tuple[JobRecord, str, int]:
        """Where the output is, once ``who`` may read it (before saying whether there is any)."""
        jobs = self.services.jobs
        refused = access.may_read_logs(who, jobs.get(display_id)[0])
        if refused:
            raise AccessDenied(refused)
        return jobs.location(display_id, attempt, node)

    # ------------------------------------------------------------ AccountingService

    async def list_finished(self, query: AccountingQuery) -> list[FinishedJob]:
        return await self._core(self.services.accounting.finished, query)

    async def usage_summary(
        self, query: AccountingQuery
    ) -> tuple[list[UsageTotal], list[UsageTotal]]:
        """Totals per user and per account."""
        return await self._core(self.services.accounting.summary, query)

    async def metrics_sample(self) -> ClusterSample:
        """What the model and the heartbeat path show now, for a /metrics scrape."""
        cluster = await self._core(sample, self.services)
        telemetry = TelemetrySample(
            self.telemetry_dropped,
            len(self._telemetry),
            telemetry_period(self.services.config, len(self._sessions)),
        )
        return replace(cluster, telemetry=telemetry)

    # ------------------------------------------------------------ NotificationService

    async def claim_notifications(self, limit: int) -> list[Delivery]:
        """Up to ``limit`` job-end webhooks due now (the notifier posts them)."""
        return await self._background(self.services.notifications.claim, limit)

    async def notification_result(self, delivery: Delivery, status: int, error: str) -> None:
        """Record how a post went: delivered, or failed (retried later or given up)."""
        notifications = self.services.notifications
        if error:
            await self._background(notifications.failed, delivery)
        else:
            await self._background(notifications.delivered, delivery, status)

    # ------------------------------------------------------------ NodeService, GpuHealth

    async def list_nodes(
        self,
        page_size: int,
        page_token: str,
        summary: bool,
        summary_only: bool,
        states: tuple[str, ...] = (),
    ) -> NodePage:
        """A page of nodes (copies with their displayed status) in name order, only those in
        ``states`` when given, and with ``summary`` counts over all nodes. Built
        ``NODES_PER_HOP`` nodes per core-thread hop, so a large page never holds the core
        thread for long; each node is as it was in its hop."""
        nodes = self.services.nodes
        want = nodes.page_size(page_size)
        first = await self._core(
            nodes.page, min(want, NODES_PER_HOP), page_token, summary, summary_only, states
        )
        shown, page = list(first.nodes), first
        while page.next_page_token and len(shown) < want:
            hop = min(want - len(shown), NODES_PER_HOP)
            page = await self._core(nodes.page, hop, page.next_page_token, False, False, states)
            shown += page.nodes
        return replace(first, nodes=shown, next_page_token=page.next_page_token)

    async def node_bookings(self, names: list[str]) -> dict[str, NodeBookings]:
        """Reservations on these nodes now and next (``ginfo``)."""
        return await self._core(self.services.reservations.on_nodes, names)

    async def get_node(self, name: str) -> tuple[NodeState, NodeStatus]:
        return await self._core(self.services.nodes.show, name)

    async def add_node(
        self, name: str, labels: dict[str, str], user: str, rotate_token: bool
    ) -> str:
        """Register a node (or rotate its token: the old token's stream ends now)."""
        token = await self._core(self.services.nodes.add, name, labels, user, rotate_token)
        if rotate_token:
            self.disconnect(name.strip())
        self.request_pass()
        return token

    async def drain_node(self, name: str, reason: str, user: str) -> tuple[NodeState, NodeStatus]:
        shown = await self._core(self._drain_node, name, reason, user)
        self.request_pass()
        return shown

    def _drain_node(self, name: str, reason: str, user: str) -> tuple[NodeState, NodeStatus]:
        nodes = self.services.nodes
        nodes.drain(name, reason, user)
        return nodes.show(name)

    async def resume_node(self, name: str, user: str) -> tuple[NodeState, NodeStatus]:
        shown = await self._core(self._resume_node, name, user)
        self.request_pass()
        return shown

    def _resume_node(self, name: str, user: str) -> tuple[NodeState, NodeStatus]:
        nodes = self.services.nodes
        nodes.resume(name, user)
        return nodes.show(name)

    async def remove_node(self, name: str, force: bool, user: str) -> RemoveResult:
        """Forget a node: stop its containers, then end its stream."""
        result, orders = await self._core(self.services.nodes.remove, name, force, user)
        self.dispatch(orders)
        self.disconnect(name)
        self.request_pass()
        return result

    async def resume_gpu(self, node: str, index: int, user: str) -> str:
        message = await self._core(self.services.gpus.resume, node, index, user)
        self.request_pass()  # a resumed GPU can take pending jobs at once
        return message

    async def drain_gpu(self, node: str, index: int, user: str, reason: str) -> str:
        message = await self._core(self.services.gpus.drain, node, index, user, reason)
        self.request_pass()
        return message

    # ------------------------------------------------------------ reservations

    async def create_reservation(
        self, request: ReservationRequest, principal: Principal
    ) -> Reservation:
        r = await self._core(self.services.reservations.create, request, principal)
        self._reservations_changed()
        return r

    async def list_reservations(self) -> list[tuple[Reservation, list[str]]]:
        return await self._core(self._list_reservations)

    def _list_reservations(self) -> list[tuple[Reservation, list[str]]]:
        service = self.services.reservations
        return [(r, service.jobs_of(r.name)) for r in service.all()]

    async def get_reservation(self, name: str) -> tuple[Reservation, list[str]]:
        return await self._core(self._get_reservation, name)

    def _get_reservation(self, name: str) -> tuple[Reservation, list[str]]:
        service = self.services.reservations
        return service.get(name), service.jobs_of(name)

    async def update_reservation(
        self, name: str, request: ReservationRequest, given: Sequence[str], principal: Principal
    ) -> Reservation:
        service = self.services.reservations
        r = await self._core(service.update, name, request, tuple(given), principal)
        self._reservations_changed()
        return r

    async def import_reservations(
        self, rows: list[ReservationRequest], principal: Principal, dry_run: bool, skip_bad: bool
    ) -> tuple[list[str | None], bool]:
        service = self.services.reservations
        errors, created = await self._core(service.import_many, rows, principal, dry_run, skip_bad)
        if created:
            self._reservations_changed()
        return errors, created

    async def delete_reservation(self, name: str, principal: Principal) -> Reservation:
        """Delete a reservation without running jobs; its pending jobs then wait with
        ``ReservationDeleted``."""
        r = await self._core(self.services.reservations.delete, name, principal)
        self._reservations_changed()
        return r

    async def reservation_usage(self, name: str) -> Usage:
        return await self._core(self.services.reservations.usage, name)

    async def reservation_edges(self) -> list[float]:
        """Housekeeping at a window's start or end (recurring ones move on, PURGE_COMP ones
        go), then a pass; returns the future starts and ends for the clock."""
        edges = await self._core(self.services.reservations.edges)
        self.request_pass()
        return edges

    def _reservations_changed(self) -> None:
        self.request_pass()
        if self.on_reservations is not None:
            self.on_reservations()

    # ------------------------------------------------------------ users, tokens, audit

    def authenticate(self, token: str) -> Principal | None:
        """The principal of a current token, from memory (no thread hop)."""
        return self.services.users.authenticate(token)

    async def load_principal(self, token: str) -> Principal | None:
        """The principal of a current token the memory does not know yet (store lookup)."""
        return await self._core(self.services.users.load, token)

    async def add_user(
        self,
        name: str,
        admin: bool,
        accounts: Sequence[str],
        default_account: str,
        uid: int | None,
        gid: int | None,
    ) -> tuple[UserRecord, str]:
        users = self.services.users
        return await self._core(users.add, name, admin, accounts, default_account, uid, gid)

    async def list_users(self) -> list[UserRecord]:
        return await self._core(self.services.users.all)

    async def revoke_user(self, name: str) -> UserRecord:
        """Revoke the user's token and hold their pending jobs (UserRevoked)."""
        return await self._core(self._revoke, name)

    def _revoke(self, name: str) -> UserRecord:
        user = self.services.users.revoke(name)
        self.services.control.hold_revoked(user.name)
        return user

    async def new_token(self, name: str) -> tuple[UserRecord, str]:
        return await self._core(self.services.users.new_token, name)

    async def get_user(self, name: str) -> UserRecord:
        return await self._core(self.services.users.get, name)

    async def record(self, entry: AuditEntry) -> None:
        """Append to the audit log."""
        await self._core(self.services.users.record, entry)

    async def audit(self, since: float, limit: int) -> list[AuditEntry]:
        return await self._core(self.services.users.audit, since, limit)

    # ------------------------------------------------------------ agents (one stream each)

    async def agent_connect(self, hello: Hello, peer: str = "") -> AgentSession:
        """Authenticate and reconcile; the new session replaces any older one of that node.
        A refused hello is recorded in the audit log."""
        session = AgentSession(hello.node_name, next(self._session_ids), peer)
        joined = len(self._sessions) + (hello.node_name not in self._sessions)
        period = telemetry_period(self.services.config, joined)
        try:
            orders = await self._background(self.hello_step, hello, session.id, period)
        except AuthError as exc:
            await self._refuse_agent(session, "hello", "", str(exc))
            raise
        old = self._sessions.get(hello.node_name)
        if old is not None:
            old.outbox.put_nowait(None)
            self._fail_log_streams(hello.node_name)
        self._sessions[hello.node_name] = session
        self.dispatch(orders)
        self.request_pass()
        return session

    def hello_step(self, hello: Hello, session: int, period: float | None = None) -> Orders:
        """The core-thread part of ``agent_connect`` (in-process tests call it directly);
        ``period``: the telemetry period to give."""
        services = self.services
        orders = services.agents.hello(hello, session, period)
        services.gpus.node_joined(services.model.nodes[hello.node_name])
        return orders

    def agent_heartbeat(self, session: AgentSession, beat: Beat) -> None:
        """On receipt (event loop): stamp liveness, answer with a pong, and buffer the
        telemetry for the next batch; it never waits for the core thread. ``beat`` may be a
        call that decodes the wire message: it then runs on the core thread, and not at all
        for telemetry that is shed."""
        received = self.services.liveness.stamp(session.node, session.id)
        session.outbox.put_nowait(self._pong())
        if self._telemetry.add(ReceivedBeat(session.node, session.id, beat, received)):
            self._report_behind()
        if self._telemetry_task is None and not self._stopping:
            self._telemetry_task = asyncio.create_task(self._apply_telemetry())

    def agent_keepalive(self, session: AgentSession) -> None:
        """On receipt (event loop): stamp liveness and answer; no core-thread work."""
        self.services.liveness.stamp(session.node, session.id)
        session.outbox.put_nowait(self._pong())

    def _pong(self) -> Pong:
        """A pong with the telemetry period for the nodes connected now."""
        return Pong(time.time(), telemetry_period(self.services.config, len(self._sessions)))

    async def _apply_telemetry(self) -> None:
        """Apply buffered telemetry, one core-thread hop per batch of at most
        ``TELEMETRY_PER_HOP`` heartbeats (a request queued for the core thread meanwhile waits
        for one such hop, not for a backlog), until none waits."""
        try:
            while len(self._telemetry) and not self._stopping:  # telemetry dies with us
                if len(self._telemetry) < TELEMETRY_PER_HOP:
                    await asyncio.sleep(TELEMETRY_BATCH_DELAY)
                batch = self._telemetry.take(TELEMETRY_PER_HOP)
                try:
                    if await self._background(self.telemetry_step, batch):
                        self.request_pass()
                except Exception:
                    log.exception("applying telemetry failed; it was dropped")
        finally:
            self._telemetry_task = None

    def _report_behind(self) -> None:
        self._behind_since_log += 1
        now = time.monotonic()
        if now - self._behind_logged >= BEHIND_LOG_INTERVAL:
            log.warning(
                "scheduler behind on telemetry: %d heartbeat(s) shed since the last warning "
                "(%d in all); only the latest per node is applied",
                self._behind_since_log,
                self.telemetry_dropped,
            )
            self._behind_logged = now
            self._behind_since_log = 0

    def telemetry_step(self, batch: list[ReceivedBeat]) -> bool:
        """The core-thread part of ``agent_heartbeat``: apply a batch of heartbeats; True when
        what the policy sees changed."""
        changed = False
        for item in batch:
            beat = item.decoded()
            changed = self.heartbeat_step(item.node, item.session, beat, item.received) or changed
        return changed

    def heartbeat_step(
        self, node: str, session: int, beat: Heartbeat, received: float | None = None
    ) -> bool:
        """Apply one heartbeat received at ``received`` (default now): True when what the
        policy sees of the node changed (in-process tests call it directly). The one place
        applied telemetry is handed to its observers: GPU health, then anything that
        accounts per node or job from telemetry."""
        services = self.services
        changed = services.agents.heartbeat(node, session, beat, received)
        services.meter.observe(node, session)
        return services.gpus.observe(node, session) or changed

    def agent_event(self, session: AgentSession, event: AgentEvent) -> None:
        """On receipt (event loop): stamp liveness and queue the event on its own path, which
        telemetry never delays and nothing sheds; events apply in arrival order."""
        self.services.liveness.stamp(session.node, session.id)
        self._events.append((session, event))
        if self._events_task is None and not self._stopping:
            self._events_task = asyncio.create_task(self._apply_events())

    async def _apply_events(self) -> None:
        """Apply queued job events, up to ``EVENTS_PER_HOP`` of those waiting in one core-thread
        hop (requests queued for the core thread meanwhile get their turn between hops), until
        none waits."""
        try:
            while self._events:
                batch = self._events[:EVENTS_PER_HOP]
                del self._events[:EVENTS_PER_HOP]
                orders, wanted = await self._background(self.events_step, batch)
                self.dispatch(orders)
                if wanted:
                    self.request_pass()
        finally:
            self._events_task = None

    def events_step(self, batch: list[tuple[AgentSession, AgentEvent]]) -> tuple[Orders, bool]:
        """The core-thread part of ``agent_event``: the orders the events cause, and whether a
        pass is wanted (anything but a start frees or changes resources). A report about a job
        its node does not run (``access.may_report``) is refused, acknowledged and recorded."""
        services = self.services
        orders: Orders = []
        wanted = False
        try:
            with services.model.together():  # one transaction for the batch, then the acks
                for session, event in batch:
                    try:
                        job = services.model.jobs.get(event.job_id)
                        refused = access.may_report(session.node, job, event.attempt)
                        if refused:
                            target = f"job={event.job_id}"
                            record = self._refusal(session, "job_event", target, refused)
                            services.users.record(record)
                            orders.append((session.node, EventAck(event.job_id, event.attempt)))
                            continue
                        orders += services.agents.event(session.node, session.id, event)
                    except Exception:
                        log.exception("applying %s of job %d failed", event.kind, event.job_id)
                    wanted = wanted or event.kind != "STARTED"
        except Exception:
            log.exception("storing %d job event(s) failed; none is acknowledged", len(batch))
            return [], True
        return orders, wanted

    def agent_log_data(self, session: AgentSession, data: LogData) -> None:
        """On receipt (event loop): stamp liveness and hand output to the ``glogs`` stream
        that asked this node for it; output for a request made of another node is refused and
        recorded (the record is written by a task: receipt never waits)."""
        self.services.liveness.stamp(session.node, session.id)
        entry = self._log_streams.get(data.request_id)
        if entry is None:
            return
        refused = access.may_send_logs(session.node, entry[0])
        if refused:
            target = f"request={data.request_id}"
            task = asyncio.create_task(self._refuse_agent(session, "log_data", target, refused))
            self._recording.add(task)
            task.add_done_callback(self._recording.discard)
            return
        entry[1].put_nowait(data)

    def _refusal(self, session: AgentSession, what: str, target: str, why: str) -> AuditEntry:
        """The audit entry of a refused agent message (and a warning in the log)."""
        log.warning("refused %s of node %s: %s", what, session.node, why)
        return AuditEntry(
            time.time(),
            f"node:{session.node}",
            f"AgentService/Connect {what}",
            target,
            session.peer,
            allowed=False,
            detail=why,
        )

    async def _refuse_agent(self, session: AgentSession, what: str, target: str, why: str) -> None:
        await self.record(self._refusal(session, what, target, why))

    async def agent_gone(self, session: AgentSession) -> None:
        if self._sessions.get(session.node) is session:
            del self._sessions[session.node]
            self._fail_log_streams(session.node)
        await self._background(self.services.agents.disconnected, session.node, session.id)
        self.request_pass()

    def _fail_log_streams(self, node: str) -> None:
        for stream_node, queue in self._log_streams.values():
            if stream_node == node:
                queue.put_nowait(
                    LogData(0, eof=True, error=f"node {node} disconnected while sending output")
                )
