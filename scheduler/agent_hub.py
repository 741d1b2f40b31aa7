"""The agent hub: one live stream per node, orders routed to it, and data relayed back.

Event loop only. A session is a node's live stream (``outbox`` feeds it; None closes it); a
newer session of a node replaces the older one. Orders for a node without a live stream are
dropped (a reconnecting agent is reconciled from the database instead). The relay pairs a
request sent to one node with the data that node sends back (``glogs`` output today; any other
per-request stream from an agent, such as an interactive session or an srun step, opens its
own relay over the same hub): data from another node is refused and recorded, and a node's
open requests fail when its stream ends.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from rota.messages import AgentOrder, LogData, LogRequest
from rota.scheduler.cluster.users import AuditEntry
from rota.scheduler.core import authz
from rota.scheduler.core.audit import agent_refusal
from rota.scheduler.core.errors import NotFound
from rota.scheduler.core.lifecycle import Orders

log = logging.getLogger("rota.scheduler")
D = TypeVar("D")
LOG_WINDOW = 4 << 20  # bytes of a log request's output the scheduler holds at once


@dataclass(eq=False)
class AgentSession:
    """One live agent stream; ``outbox`` feeds it (None closes it)."""

    node: str
    id: int
    peer: str = ""  # the stream's peer address, for the audit log
    dials: bool = False  # the agent dials forwards' data connections back
    log_windows: bool = False  # the agent keeps a log request's window (LogRequest.ack)
    outbox: asyncio.Queue[AgentOrder | None] = field(default_factory=asyncio.Queue)

    def refusal(self, what: str, target: str, why: str) -> AuditEntry:
        """The audit entry of a refused message of this stream (``audit.agent_refusal``)."""
        return agent_refusal(self.node, self.peer, what, target, why, time.time())


class AgentHub:
    """Live sessions by node; ``record`` appends a refusal to the audit log."""

    def __init__(self, record: Callable[[AuditEntry], Coroutine[Any, Any, None]]) -> None:
        self.record = record
        self._sessions: dict[str, AgentSession] = {}
        self._ids = itertools.count(1)
        self._relays: list[Relay[object]] = []
        self._recording: set[asyncio.Task[None]] = set()  # refusals being written

    def __len__(self) -> int:
        return len(self._sessions)

    def new_session(
        self, node: str, peer: str = "", dials: bool = False, log_windows: bool = False
    ) -> AgentSession:
        """A session for ``node``, not yet live (``attach`` makes it so)."""
        return AgentSession(node, next(self._ids), peer, dials, log_windows)

    def joined_count(self, node: str) -> int:
        """How many nodes are connected once ``node`` is."""
        return len(self._sessions) + (node not in self._sessions)

    def attach(self, session: AgentSession) -> None:
        """Make ``session`` its node's live stream, closing an older one."""
        old = self._sessions.get(session.node)
        if old is not None:
            old.outbox.put_nowait(None)
            self._fail(session.node)
        self._sessions[session.node] = session

    def live(self, node: str) -> AgentSession | None:
        return self._sessions.get(node)

    def sessions(self) -> list[AgentSession]:
        return list(self._sessions.values())

    def detach(self, session: AgentSession) -> bool:
        """Forget ``session`` if it is still its node's live stream; whether it was."""
        if self._sessions.get(session.node) is not session:
            return False
        del self._sessions[session.node]
        self._fail(session.node)
        return True

    def disconnect(self, node: str) -> None:
        """End the node's live stream (orders queued before this still go out first)."""
        session = self._sessions.pop(node, None)
        if session is not None:
            session.outbox.put_nowait(None)
            self._fail(node)

    def close_stale(self, live: dict[str, int], before: Iterable[AgentSession]) -> None:
        """Close the sessions of ``before`` that the model no longer counts as connected
        (``live``: node -> its session id there)."""
        for session in before:
            if self._sessions.get(session.node) is session and live.get(session.node) != session.id:
                log.warning("closing the stale stream of node %s", session.node)
                self.disconnect(session.node)

    def dispatch(self, orders: Orders) -> None:
        """Queue each order on its node's live stream; orders for absent nodes are dropped."""
        for node, order in orders:
            session = self._sessions.get(node)
            if session is not None:
                session.outbox.put_nowait(order)

    def close_all(self) -> None:
        for session in list(self._sessions.values()):
            session.outbox.put_nowait(None)

    def relay(self, make_error: Callable[[str], D]) -> Relay[D]:
        """A new relay over this hub; ``make_error(why)`` is what a request gets when its node
        goes away."""
        relay: Relay[D] = Relay(self, make_error)
        self._relays.append(relay)  # type: ignore[arg-type]
        return relay

    def refuse(self, session: AgentSession, what: str, target: str, why: str) -> None:
        """Record a refused agent message by a task (receipt never waits)."""
        task = asyncio.create_task(self.record(session.refusal(what, target, why)))
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)

    async def drain(self) -> None:
        """Wait for refusals being recorded."""
        for task in list(self._recording):
            await task

    def _fail(self, node: str) -> None:
        for relay in self._relays:
            relay.fail(node, f"node {node} disconnected while sending output")


class Relay(Generic[D]):
    """Requests made of one node each, and the data their node sends back."""

    def __init__(self, hub: AgentHub, make_error: Callable[[str], D]) -> None:
        self.hub = hub
        self.make_error = make_error
        self._ids = itertools.count(1)
        self._open: dict[int, tuple[str, asyncio.Queue[D]]] = {}

    def open(self, node: str) -> tuple[int, asyncio.Queue[D]]:
        """A request id and the queue its data arrives on (``close`` it when done)."""
        request_id = next(self._ids)
        queue: asyncio.Queue[D] = asyncio.Queue()
        self._open[request_id] = (node, queue)
        return request_id, queue

    def close(self, request_id: int) -> None:
        self._open.pop(request_id, None)

    def deliver(self, session: AgentSession, request_id: int, data: D, what: str) -> None:
        """Hand ``data`` to request ``request_id`` if ``session``'s node may answer it (else
        refused and recorded); data for a closed request is dropped."""
        entry = self._open.get(request_id)
        if entry is None:
            return
        refused = authz.may_send_data(session.node, entry[0])
        if refused:
            self.hub.refuse(session, what, f"request={request_id}", refused)
            return
        entry[1].put_nowait(data)

    def fail(self, node: str, why: str) -> None:
        for stream_node, queue in self._open.values():
            if stream_node == node:
                queue.put_nowait(self.make_error(why))


class LogRelay:
    """``glogs``: an attempt's output relayed from the agent that ran it, ``LOG_WINDOW`` bytes
    at most in flight (sent by the node and not yet taken by the reader) for an agent that
    keeps windows: a reader that stops reading holds the output on the node, not here. A node
    that sends twice its window has its request ended."""

    def __init__(self, hub: AgentHub) -> None:
        self.hub = hub
        self.relay = hub.relay(lambda why: LogData(0, eof=True, error=why))
        self._held: dict[int, tuple[str, int]] = {}  # windowed request -> (node, bytes held)

    async def stream(
        self, display_id: str, job_id: int, node: str, attempt: int, follow: bool
    ) -> AsyncGenerator[bytes, None]:
        """The output, chunk by chunk; NotFound when the node is not connected or fails."""
        session = self.hub.live(node)
        if session is None:
            raise NotFound(
                f"node {node} that ran job {display_id} is not connected; its output is kept there"
            )
        request_id, queue = self.relay.open(node)
        window = LOG_WINDOW if session.log_windows else 0
        if window:
            self._held[request_id] = (node, 0)
        session.outbox.put_nowait(LogRequest(request_id, job_id, attempt, follow, window=window))
        try:
            while True:
                chunk = await queue.get()
                if chunk.error:
                    raise NotFound(chunk.error)
                if chunk.data:
                    yield chunk.data  # resumed when the reader wants more: it took this chunk
                    if window:
                        self._taken(request_id, node, len(chunk.data))
                if chunk.eof:
                    return
        finally:
            self._held.pop(request_id, None)
            self.relay.close(request_id)
            live = self.hub.live(node)
            if live is not None:
                live.outbox.put_nowait(LogRequest(request_id, cancel=True))

    def _taken(self, request_id: int, node: str, size: int) -> None:
        """The reader took ``size`` bytes: they leave the window, and the node is told."""
        held = self._held.get(request_id)
        if held is not None:
            self._held[request_id] = (node, max(0, held[1] - size))
        live = self.hub.live(node)
        if live is not None:
            live.outbox.put_nowait(LogRequest(request_id, ack=size))

    def deliver(self, session: AgentSession, data: LogData) -> None:
        held = self._held.get(data.request_id)
        if held is not None and held[0] == session.node and data.data:
            size = held[1] + len(data.data)
            self._held[data.request_id] = (session.node, size)
            if size > 2 * LOG_WINDOW:
                why = f"node {session.node} sent more output than its window of {LOG_WINDOW} bytes"
                log.warning("%s (request %d)", why, data.request_id)
                data = LogData(data.request_id, eof=True, error=why)
        self.relay.deliver(session, data.request_id, data, "log_data")
