"""Interactive sessions relayed agent <-> scheduler <-> client over the agents' own streams.

Event loop only. Built on the hub's ``Relay`` (a request made of one node and the data it sends
back), like the log relay. Both directions are bounded: the agent sends at most ``window``
bytes of output not yet taken by the client (acknowledged once the client's stream took it),
and the client's input is read only while less than ``window`` bytes of it wait unwritten on
the node. A slow client therefore slows its own session down, never the scheduler, and a node
that ignores the window has its session ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from rota.messages import SessionInput, SessionOpen, SessionOutput
from rota.scheduler.agent_hub import AgentHub, AgentSession
from rota.scheduler.core.errors import NotFound

WINDOW = 4 << 20  # bytes in flight each way per session


class SessionRelay:
    """Open sessions, each a request made of one node."""

    def __init__(self, hub: AgentHub, window: int = WINDOW) -> None:
        self.hub = hub
        self.window = window
        self.relay = hub.relay(lambda why: SessionOutput(0, error=why, node_lost=True))
        self._queued: dict[int, int] = {}  # request id -> output bytes not yet taken
        self._nodes: dict[int, str] = {}  # request id -> the node it was opened on

    def __len__(self) -> int:
        return len(self._queued)

    def deliver(self, session: AgentSession, out: SessionOutput) -> None:
        """Output, acknowledgements or the end of a session from ``session``'s node."""
        queued = self._queued.get(out.request_id)
        if queued is None:
            return  # closed
        if out.data and self._nodes.get(out.request_id) == session.node:  # else refused below
            queued += len(out.data)
            self._queued[out.request_id] = queued
            if queued > 2 * self.window:
                why = f"node {session.node} sent more than the session window"
                out = SessionOutput(out.request_id, error=why)
        self.relay.deliver(session, out.request_id, out, "session_output")

    async def run(
        self, node: str, request: SessionOpen, inputs: AsyncIterator[SessionInput]
    ) -> AsyncGenerator[SessionOutput, None]:
        """Open ``request`` on ``node`` and relay: the output as it comes, ending with the
        session's end (``exited``, ``error`` or ``detached``). ``inputs`` is the client's input (data, end,
        resizes); when the caller stops, the node is told to close the session."""
        if self.hub.live(node) is None:
            raise NotFound(f"node {node} is not connected")
        request_id, queue = self.relay.open(node)
        self._queued[request_id] = 0
        self._nodes[request_id] = node
        self._send(node, dataclasses.replace(request, request_id=request_id, window=self.window))
        credit = _Credit(self.window)
        pump = asyncio.create_task(self._pump(node, request_id, inputs, credit))
        ended = False
        try:
            while True:
                out = await queue.get()
                if out.ack:
                    credit.release(out.ack)
                if out.data:
                    self._queued[request_id] -= len(out.data)
                    yield out
                    self._send(node, SessionInput(request_id, ack=len(out.data)))
                if out.exited or out.error or out.detached:
                    ended = True
                    yield out
                    return
        finally:
            pump.cancel()
            self.relay.close(request_id)
            self._queued.pop(request_id, None)
            self._nodes.pop(request_id, None)
            if not ended:
                self._send(node, SessionInput(request_id, close=True))

    async def _pump(
        self, node: str, request_id: int, inputs: AsyncIterator[SessionInput], credit: _Credit
    ) -> None:
        async for item in inputs:
            if item.data:
                try:
                    await credit.take(len(item.data))
                except asyncio.CancelledError:  # the relay ended: the next one sends it
                    if isinstance(inputs, Resumable):
                        inputs.put_back(item)
                    raise
            self._send(node, dataclasses.replace(item, request_id=request_id))

    async def dial(
        self, node: str, request: SessionOpen, connected: asyncio.Future[Any], wait: float
    ) -> SessionOutput | None:
        """Open forward ``request`` (with a dial ticket) on ``node`` and wait up to ``wait``
        seconds for its data connection (``connected`` done): None once it is. Else the
        node's answer: ``error`` (the port cannot be opened) or ``dial_error`` (no data
        connection: relay the forward over the stream instead; at once for an agent that does
        not dial back), or, when ``wait`` passed with neither, an answer with neither (the
        node may still be opening a port that is slow to accept: relay this forward only)."""
        session = self.hub.live(node)
        if session is None:
            raise NotFound(f"node {node} is not connected")
        if not session.dials:  # an older agent: it would take the order for a session
            return SessionOutput(0, dial_error=f"node {node}'s agent dials no data connections")
        request_id, queue = self.relay.open(node)
        self._queued[request_id] = 0
        self._nodes[request_id] = node
        answer = asyncio.ensure_future(queue.get())
        try:
            self._send(node, dataclasses.replace(request, request_id=request_id))
            await asyncio.wait((answer, connected), timeout=wait, return_when="FIRST_COMPLETED")
            if connected.done():
                return None
            out = answer.result() if answer.done() else SessionOutput(request_id)
            if not out.error:  # an agent that ignored the ticket may have opened a session
                self._send(node, SessionInput(request_id, close=True))
            return out
        finally:
            answer.cancel()
            self.relay.close(request_id)
            self._queued.pop(request_id, None)
            self._nodes.pop(request_id, None)

    def _send(self, node: str, order: SessionOpen | SessionInput) -> None:
        session = self.hub.live(node)
        if session is not None:
            session.outbox.put_nowait(order)


class Resumable:
    """A client's input that outlives one ``SessionRelay.run`` (a session opened again once
    its node is back): a task reads it, one message at a time and only once a relay asks for
    one, so a relay that stops reading leaves it whole and at most one message of the
    client's waits here (a queue read ahead of the relay held five, 20 MiB of 4 MiB messages
    per session beyond its window, while the node was away or had no room). It remembers the
    terminal's last size, for the next opening."""

    def __init__(self, source: AsyncIterator[SessionInput], rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self._wanted = asyncio.Event()
        self._queue: asyncio.Queue[SessionInput | None] = asyncio.Queue(1)
        self._back: SessionInput | None = None  # taken by a relay that ended before sending it
        self._reader = asyncio.create_task(self._read(source))

    async def _read(self, source: AsyncIterator[SessionInput]) -> None:
        with contextlib.suppress(Exception):  # a broken client stream ends as a closed one
            iterator = aiter(source)
            while True:
                await self._wanted.wait()
                self._wanted.clear()
                try:
                    item = await anext(iterator)
                except StopAsyncIteration:
                    break
                await self._queue.put(item)
        await self._queue.put(None)

    def __aiter__(self) -> Resumable:
        return self

    async def __anext__(self) -> SessionInput:
        if self._back is not None:
            back, self._back = self._back, None
            return back
        if self._queue.empty():
            self._wanted.set()
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)  # ended for every later reader too
            raise StopAsyncIteration
        if item.rows and item.cols:
            self.rows, self.cols = item.rows, item.cols
        return item

    def put_back(self, item: SessionInput) -> None:
        """``item``, taken by a relay that ended before it could send it, comes next."""
        self._back = item

    def close(self) -> None:
        self._reader.cancel()


class _Credit:
    """Input bytes in flight to the node, at most ``window`` (one chunk may pass it)."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.in_flight = 0
        self._room = asyncio.Event()
        self._room.set()

    async def take(self, size: int) -> None:
        while self.in_flight >= self.window:
            self._room.clear()
            await self._room.wait()
        self.in_flight += size

    def release(self, size: int) -> None:
        self.in_flight = max(0, self.in_flight - size)
        if self.in_flight < self.window:
            self._room.set()
