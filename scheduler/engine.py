"""The asynchronous side of the scheduler: runs Core on its own thread, the policy on another,
coalesces scheduling passes, and routes orders and log data to and from agent streams.

Submitting, listing and heartbeats never wait for a pass: ``decide`` runs on the policy thread
while the core thread keeps serving; only the short apply step queues behind them.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from rota.scheduler.cluster.messages import (
    AgentEvent,
    AgentOrder,
    Heartbeat,
    Hello,
    LogData,
    LogRequest,
    Pong,
)
from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeState
from rota.scheduler.cluster.status import NodeStatus, node_status
from rota.scheduler.core import CancelResult, Core, NotFound, Orders, SubmitItem, SubmitResult
from rota.scheduler.core.submission import task_count
from rota.scheduler.large_submit import LARGE_SUBMISSION, LargeSubmissions
from rota.scheduler.policy.explain import Explanation, explain
from rota.scheduler.store.store import JobQuery

log = logging.getLogger("rota.scheduler")
T = TypeVar("T")


@dataclass(eq=False)
class AgentSession:
    """One live agent stream; ``outbox`` feeds it (None closes it)."""

    node: str
    id: int
    outbox: asyncio.Queue[AgentOrder | None] = field(default_factory=asyncio.Queue)


class Engine:
    """Async facade over Core used by the gRPC servicers and the periodic jobs."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self._core_pool = ThreadPoolExecutor(1, thread_name_prefix="rota-core")
        self._policy_pool = ThreadPoolExecutor(1, thread_name_prefix="rota-policy")
        self._large = LargeSubmissions(core, self.call)
        self._sessions: dict[str, AgentSession] = {}
        self._session_ids = itertools.count(1)
        self._log_ids = itertools.count(1)
        self._log_streams: dict[int, tuple[str, asyncio.Queue[LogData]]] = {}
        self._pass_wanted = asyncio.Event()
        self._pass_task: asyncio.Task[None] | None = None
        self._stopping = False
        self.passes = 0

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the core thread (the only thread that touches Core and the store)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._core_pool, functools.partial(fn, *args, **kwargs))

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
        """Snapshot, decide (policy thread), apply (core thread), then send orders."""
        snapshot = await self.call(self.core.snapshot)
        loop = asyncio.get_running_loop()
        plan = await loop.run_in_executor(self._policy_pool, self.core.decide, snapshot)
        orders = await self.call(self.core.apply, plan, snapshot.version)
        self.passes += 1
        self.dispatch(orders)

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
        """Periodic housekeeping (APScheduler calls this): node timeouts, then a pass."""
        self.dispatch(await self.call(self.core.tick))
        await self._close_stale_sessions()
        self.request_pass()

    async def _close_stale_sessions(self) -> None:
        """Close streams of nodes that Core no longer counts as connected (heartbeats stopped,
        or the node was removed): a frozen agent that wakes up must say hello again and be
        reconciled, not carry on over its old stream."""
        before = list(self._sessions.values())  # newer sessions are checked next tick
        live = await self.call(
            lambda: {name: node.session for name, node in self.core.nodes.items()}
        )
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

    # ------------------------------------------------------------ orders

    def dispatch(self, orders: Orders) -> None:
        """Queue each order on its node's live stream; orders for absent nodes are dropped
        (a reconnecting agent is reconciled from the database instead)."""
        for node, order in orders:
            session = self._sessions.get(node)
            if session is not None:
                session.outbox.put_nowait(order)

    # ------------------------------------------------------------ jobs

    async def submit(
        self, items: Sequence[SubmitItem], user: str, test_only: bool
    ) -> list[SubmitResult]:
        if not test_only and task_count(items) > LARGE_SUBMISSION:
            results = await self._large.submit(items, user)
        else:
            results = await self.call(self.core.submit, items, user, test_only)
        if not test_only:
            self.request_pass()
        return results

    async def cancel(self, ids: Sequence[str], user: str, reason: str) -> list[CancelResult]:
        results, orders = await self.call(self.core.cancel, ids, user, reason)
        self.dispatch(orders)
        self.request_pass()
        return results

    async def control(self, action: str, ids: Sequence[str], user: str) -> list[CancelResult]:
        results, orders = await self.call(self.core.control, action, ids, user)
        self.dispatch(orders)
        self.request_pass()
        return results

    async def list_jobs(self, query: JobQuery, ids: Sequence[str]) -> list[JobRecord]:
        return await self.call(self.core.list_jobs, query, ids)

    async def get_job(self, display_id: str) -> tuple[JobRecord, list[JobEvent]]:
        return await self.call(self.core.get_job, display_id)

    async def explain(self, display_id: str) -> tuple[JobRecord, Explanation | None, int]:
        """The job, and when pending why it waits (computed on the policy thread) and how many
        jobs are pending."""
        job, snapshot = await self.call(self.core.explain_target, display_id)
        if snapshot is None:
            return job, None, 0
        loop = asyncio.get_running_loop()
        why = functools.partial(explain, snapshot, job.id, self.core.config.policy)
        return job, await loop.run_in_executor(self._policy_pool, why), len(snapshot.pending)

    async def list_nodes(self) -> list[tuple[NodeState, NodeStatus]]:
        """Copies of every node with its displayed status, in name order."""
        return await self.call(self._nodes_view)

    def _nodes_view(self) -> list[tuple[NodeState, NodeStatus]]:
        core = self.core
        active = [j for j in core.jobs.values() if j.state.active]
        now = core.clock()
        stale_after = 3 * core.config.heartbeat_interval
        out = []
        for n in sorted(core.nodes.values(), key=lambda n: n.name):
            status = node_status(n, active, now, stale_after)
            out.append((replace(n), replace(status, gpus=core.gpu_display(n, status.holders))))
        return out

    async def stream_logs(
        self, display_id: str, attempt: int, follow: bool, node: str = ""
    ) -> AsyncIterator[bytes]:
        """Relay an attempt's output from the agent that ran it (``node``: one rank of a gang;
        default rank 0). NotFound when unreachable."""
        job, node, attempt = await self.call(self.core.job_location, display_id, attempt, node)
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

    # ------------------------------------------------------------ agents

    async def agent_connect(self, hello: Hello) -> AgentSession:
        """Authenticate and reconcile; the new session replaces any older one of that node."""
        session = AgentSession(hello.node_name, next(self._session_ids))
        orders = await self.call(self.core.agent_hello, hello, session.id)
        old = self._sessions.get(hello.node_name)
        if old is not None:
            old.outbox.put_nowait(None)
            self._fail_log_streams(hello.node_name)
        self._sessions[hello.node_name] = session
        self.dispatch(orders)
        self.request_pass()
        return session

    async def agent_heartbeat(self, session: AgentSession, beat: Heartbeat) -> None:
        if await self.call(self.core.agent_heartbeat, session.node, session.id, beat):
            self.request_pass()
        session.outbox.put_nowait(Pong(time.time()))

    async def agent_event(self, session: AgentSession, event: AgentEvent) -> None:
        self.dispatch(await self.call(self.core.agent_event, session.node, session.id, event))
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
        await self.call(self.core.agent_disconnected, session.node, session.id)
        self.request_pass()

    def _fail_log_streams(self, node: str) -> None:
        for stream_node, queue in self._log_streams.values():
            if stream_node == node:
                queue.put_nowait(
                    LogData(0, eof=True, error=f"node {node} disconnected while sending output")
                )
