"""The engine: the only orchestrator of the scheduler's services, one method per RPC.

It alone decides what runs where. Every service call runs on the core thread (the only thread
that touches the cluster model and the store); ``decide`` and ``explain`` run on the policy
thread; the event loop only routes orders and log data to and from agent streams. Services
commit before they return orders, so an order never goes out for an uncommitted change.
Submitting, listing and heartbeats never wait for a pass: only the short apply step queues
behind them on the core thread.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from rota.messages import (
    AgentEvent,
    AgentOrder,
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
from rota.scheduler.core.errors import NotFound
from rota.scheduler.core.jobs import JobListing, JobPage, SubmitItem, SubmitResult
from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core.lookup import CancelResult
from rota.scheduler.core.nodes import RemoveResult
from rota.scheduler.core.reservations import ReservationRequest, Usage
from rota.scheduler.core.services import Services
from rota.scheduler.core.submission import task_count
from rota.scheduler.large_requests import LARGE_SUBMISSION, LargeCancels, LargeSubmissions
from rota.scheduler.metrics_sample import ClusterSample, sample
from rota.scheduler.policy.explain import Explanation
from rota.scheduler.policy.snapshot import Plan

log = logging.getLogger("rota.scheduler")
T = TypeVar("T")
WATCH_INTERVAL = 0.25  # seconds between looks at a watched job


@dataclass(eq=False)
class AgentSession:
    """One live agent stream; ``outbox`` feeds it (None closes it)."""

    node: str
    id: int
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
        self._core_pool = ThreadPoolExecutor(1, thread_name_prefix="rota-core")
        self._policy_pool = ThreadPoolExecutor(1, thread_name_prefix="rota-policy")
        self._large = LargeSubmissions(services.jobs, self._core)
        self._cancels = LargeCancels(services.jobs, self._core, self.dispatch)
        self._sessions: dict[str, AgentSession] = {}
        self._session_ids = itertools.count(1)
        self._log_ids = itertools.count(1)
        self._log_streams: dict[int, tuple[str, asyncio.Queue[LogData]]] = {}
        self._pass_wanted = asyncio.Event()
        self._pass_task: asyncio.Task[None] | None = None
        self._stopping = False
        self.passes = 0

    async def _core(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the core thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._core_pool, functools.partial(fn, *args))

    async def _policy(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the policy thread (pure: it reads only the snapshot it is given)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._policy_pool, functools.partial(fn, *args))

    # ------------------------------------------------------------ passes

    def start(self) -> None:
        self._pass_task = asyncio.create_task(self._pass_loop(), name="rota-pass-loop")
        self.request_pass()

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
        """Snapshot (core thread), decide (policy thread), apply (core thread), send orders."""
        began = time.monotonic()
        planner = self.services.planner
        snapshot = await self._core(planner.snapshot)
        plan = await self._policy(self.services.policy.decide, snapshot)
        orders, waits = await self._core(self._apply, plan, snapshot.version)
        self.passes += 1
        self.dispatch(orders)
        if self.observer is not None:
            self.observer.pass_done(time.monotonic() - began, waits)

    def _apply(self, plan: Plan, version: int) -> tuple[Orders, list[float]]:
        """Apply the plan; also how long each job it launched waited since submission."""
        orders = self.services.planner.apply(plan, version)
        jobs, now = self.services.model.jobs, time.time()
        launched = {o.job_id for _, o in orders if isinstance(o, LaunchOrder)}
        return orders, [now - jobs[i].submit_time for i in launched if i in jobs]

    async def stop(self) -> None:
        """Finish the pass in progress, then stop the loop and the threads."""
        self._stopping = True
        self._pass_wanted.set()
        if self._pass_task is not None:
            await self._pass_task
        for session in list(self._sessions.values()):
            session.outbox.put_nowait(None)
        self._core_pool.shutdown(wait=True)
        self._policy_pool.shutdown(wait=True)
        self._large.shutdown()

    async def tick(self) -> None:
        """Periodic housekeeping (APScheduler calls this): lost nodes and idle jobs, stale
        streams, then a pass."""
        self.dispatch(await self._core(self.tick_step))
        await self._close_stale_sessions()
        self.request_pass()

    def tick_step(self) -> Orders:
        """The core-thread part of ``tick`` (in-process tests call it directly)."""
        services = self.services
        orders = services.agents.lost_nodes() + services.gpus.idle_jobs()
        services.accounting.tick()
        services.reservations.housekeeping()
        return orders

    async def _close_stale_sessions(self) -> None:
        """Close streams of nodes the model no longer counts as connected (heartbeats stopped,
        or the node was removed): a frozen agent that wakes up must say hello again and be
        reconciled, not carry on over its old stream."""
        before = list(self._sessions.values())  # newer sessions are checked next tick
        live = await self._core(self.services.nodes.sessions)
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
        self, items: Sequence[SubmitItem], user: str, test_only: bool
    ) -> list[SubmitResult]:
        if not test_only and task_count(items) > LARGE_SUBMISSION:
            results = await self._large.submit(items, user)
        else:
            results = await self._core(self.services.jobs.submit, items, user, test_only)
        if not test_only:
            self.request_pass()
        return results

    async def cancel(self, ids: Sequence[str], user: str, reason: str) -> list[CancelResult]:
        results = await self._cancels.cancel(ids, user, reason)
        self.request_pass()
        return results

    async def control(self, action: str, ids: Sequence[str], user: str) -> list[CancelResult]:
        results, orders = await self._core(self.services.control.control, action, ids, user)
        self.dispatch(orders)
        self.request_pass()
        return results

    async def list_jobs(self, listing: JobListing) -> JobPage:
        return await self._core(self.services.jobs.list_page, listing)

    async def get_job(self, display_id: str) -> tuple[JobRecord, list[JobEvent]]:
        return await self._core(self.services.jobs.get, display_id)

    async def watch_job(self, display_id: str) -> AsyncGenerator[JobRecord, None]:
        """The job now and after every change, until it has ended."""
        last = None
        while True:
            job, _events = await self.get_job(display_id)
            if job != last:
                yield job
                last = job
            if job.state.terminal:
                return
            await asyncio.sleep(WATCH_INTERVAL)

    async def explain(self, display_id: str) -> tuple[JobRecord, Explanation | None, int]:
        """The job, and when pending why it waits (computed on the policy thread) and how many
        jobs are pending."""
        job, snapshot = await self._core(self.services.jobs.explain_target, display_id)
        if snapshot is None:
            return job, None, 0
        why = await self._policy(self.services.policy.explain, snapshot, job.id)
        return job, why, len(snapshot.pending)

    async def stream_logs(
        self, display_id: str, attempt: int, follow: bool, node: str = ""
    ) -> AsyncGenerator[bytes, None]:
        """Relay an attempt's output from the agent that ran it (``node``: one rank of a gang;
        default rank 0). NotFound when unreachable."""
        jobs = self.services.jobs
        job, node, attempt = await self._core(jobs.location, display_id, attempt, node)
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

    # ------------------------------------------------------------ AccountingService

    async def list_finished(self, query: AccountingQuery) -> list[FinishedJob]:
        return await self._core(self.services.accounting.finished, query)

    async def usage_summary(
        self, query: AccountingQuery
    ) -> tuple[list[UsageTotal], list[UsageTotal]]:
        """Totals per user and per account."""
        return await self._core(self.services.accounting.summary, query)

    async def metrics_sample(self) -> ClusterSample:
        """What the model shows now, for a /metrics scrape."""
        return await self._core(sample, self.services)

    # ------------------------------------------------------------ NodeService, GpuHealth

    async def list_nodes(self) -> list[tuple[NodeState, NodeStatus]]:
        """Copies of every node with its displayed status, in name order."""
        return await self._core(self.services.nodes.show_all)

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

    async def create_reservation(self, request: ReservationRequest, user: str) -> Reservation:
        r = await self._core(self.services.reservations.create, request, user)
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
        self, name: str, request: ReservationRequest, given: Sequence[str], user: str
    ) -> Reservation:
        service = self.services.reservations
        r = await self._core(service.update, name, request, tuple(given), user)
        self._reservations_changed()
        return r

    async def import_reservations(
        self, rows: list[ReservationRequest], user: str, dry_run: bool, skip_bad: bool
    ) -> tuple[list[str | None], bool]:
        service = self.services.reservations
        errors, created = await self._core(service.import_many, rows, user, dry_run, skip_bad)
        if created:
            self._reservations_changed()
        return errors, created

    async def delete_reservation(self, name: str, user: str) -> Reservation:
        """Delete a reservation without running jobs; its pending jobs then wait with
        ``ReservationDeleted``."""
        r = await self._core(self.services.reservations.delete, name, user)
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

    # ------------------------------------------------------------ agents (one stream each)

    async def agent_connect(self, hello: Hello) -> AgentSession:
        """Authenticate and reconcile; the new session replaces any older one of that node."""
        session = AgentSession(hello.node_name, next(self._session_ids))
        orders = await self._core(self.hello_step, hello, session.id)
        old = self._sessions.get(hello.node_name)
        if old is not None:
            old.outbox.put_nowait(None)
            self._fail_log_streams(hello.node_name)
        self._sessions[hello.node_name] = session
        self.dispatch(orders)
        self.request_pass()
        return session

    def hello_step(self, hello: Hello, session: int) -> Orders:
        """The core-thread part of ``agent_connect`` (in-process tests call it directly)."""
        services = self.services
        orders = services.agents.hello(hello, session)
        services.gpus.node_joined(services.model.nodes[hello.node_name])
        return orders

    async def agent_heartbeat(self, session: AgentSession, beat: Heartbeat) -> None:
        if await self._core(self.heartbeat_step, session.node, session.id, beat):
            self.request_pass()
        session.outbox.put_nowait(Pong(time.time()))

    def heartbeat_step(self, node: str, session: int, beat: Heartbeat) -> bool:
        """The core-thread part of ``agent_heartbeat``: True when what the policy sees of the
        node changed (in-process tests call it directly)."""
        services = self.services
        changed = services.agents.heartbeat(node, session, beat)
        services.meter.observe(node, session)
        return services.gpus.observe(node, session) or changed

    async def agent_event(self, session: AgentSession, event: AgentEvent) -> None:
        orders = await self._core(self.services.agents.event, session.node, session.id, event)
        self.dispatch(orders)
        if event.kind != "STARTED":
            self.request_pass()

    def agent_log_data(self, data: LogData) -> None:
        entry = self._log_streams.get(data.request_id)
        if entry is not None:
            entry[1].put_nowait(data)

    async def agent_gone(self, session: AgentSession) -> None:
        if self._sessions.get(session.node) is session:
            del self._sessions[session.node]
            self._fail_log_streams(session.node)
        await self._core(self.services.agents.disconnected, session.node, session.id)
        self.request_pass()

    def _fail_log_streams(self, node: str) -> None:
        for stream_node, queue in self._log_streams.values():
            if stream_node == node:
                queue.put_nowait(
                    LogData(0, eof=True, error=f"node {node} disconnected while sending output")
                )
