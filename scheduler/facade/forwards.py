"""ForwardFacade: ``rota forward``'s and ``rota proxy``'s raw data path (docs/interactive.md,
"The raw data path").

A client asks on the HTTP port (``scheduler/web/forward.py``); the opening is checked, the
right decided (``authz``: the job's owner or an admin) and the forward recorded (``port forward
by USER on NODE`` in the job's events, ``Interact/forward`` in the audit log) exactly as for the
gRPC session. The node's agent is then told, on its stream, to open the port and dial a data
connection back to the HTTP port with a single-use ticket (``DialTickets``); the two
connections are joined as raw bytes (``raw_relay``). When the agent cannot dial back in
``DIAL_WAIT`` seconds, the client's connection is relayed over the agent's stream instead,
as a gRPC forward is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field, replace

from rota.inputs import SpecError
from rota.messages import SessionInput, SessionOpen
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.errors import Conflict, NotFound
from rota.scheduler.core.services import Services
from rota.scheduler.core_thread import Executor
from rota.scheduler.dial_tickets import DialTickets
from rota.scheduler.facade.interactive import ClientOpen, check_open
from rota.scheduler.raw_relay import CHUNK, Side, join
from rota.scheduler.session_relay import SessionRelay
from rota.states import JobState

log = logging.getLogger("rota.scheduler")

DIAL_WAIT = 5.0  # seconds the agent has to dial the data connection back
REDIAL = 300.0  # seconds a node that could not dial back is not asked again
SWITCHED = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: rota-tcp\r\n\r\n"

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class _DataConnection:
    """An agent's data connection, held open until the client's side ``taken`` it and has
    ``ended`` (both connections closed)."""

    side: Side
    taken: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True, slots=True)
class Opened:
    """An opened forward: ``serve`` serves the client's connection (answering ``101`` first);
    ``drop`` is called instead when that connection is refused (the agent's data connection
    is then closed at once, not held for its ticket's lifetime)."""

    serve: Serve
    drop: Callable[[], None]


class ForwardFacade:
    """Raw forwards as a principal may open them. ``listening`` tells it the HTTP port the
    agents dial back to (until then, and when it is off, there is no raw path)."""

    def __init__(
        self,
        services: Services,
        core: Executor,
        relay: SessionRelay,
        tickets: DialTickets | None = None,
        wait: float = DIAL_WAIT,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.services = services
        self.core = core
        self.relay = relay
        self.tickets = tickets or DialTickets()
        self.wait = wait
        self.monotonic = monotonic
        self.port = 0
        self.tls = False
        self._undialled: dict[str, float] = {}  # node -> until when it is not asked to dial

    def listening(self, port: int, tls: bool) -> None:
        """The HTTP port is served on ``port`` (``tls``: with TLS)."""
        self.port, self.tls = port, tls

    async def open(self, request: ClientOpen, who: Principal, peer: str) -> Opened:
        """Check, authorize and record the forward, open it on the node. SpecError, NotFound, AccessDenied or
        Conflict (the job does not run) before anything is recorded; Conflict when the port
        cannot be opened (recorded, as a gRPC forward is)."""
        check_open(request)
        sessions = self.services.sessions
        job = await self.core.call(sessions.target, request.job_id, who, "forward")
        if job.state is not JobState.RUNNING:
            raise Conflict(f"job {job.display_id} is {job.state.value}, not running")
        node = request.node or job.node_names[0]
        if node not in job.node_names:
            raise SpecError("node", f"job {job.display_id} runs on {', '.join(job.node_names)}")
        opening = SessionOpen(0, job.id, job.attempt, "forward", port=request.port)
        entered = self.core.call(sessions.entered, job, who, "forward", node, peer)
        agent: _DataConnection | None = None
        if self.port:  # recorded while the node opens the port and dials back
            agent = (await asyncio.gather(entered, self._dial(node, opening)))[1]
        else:
            await entered
        what = f"forward of job {job.display_id} port {request.port} on {node}"

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:  # not idle while it is open; inside the try, so a cancel still detaches
                await self.core.call(sessions.attached, job.id)
                if agent is not None:
                    log.info("%s by %s: raw data connection", what, who.user)
                    agent.taken.set()
                    try:
                        await join(Side(reader, writer, SWITCHED), agent.side)
                    finally:
                        agent.ended.set()
                else:
                    log.info("%s by %s: relayed over the agent's stream", what, who.user)
                    await self._over_stream(node, opening, reader, writer)
            finally:
                await self.core.call(sessions.detached, job.id)

        def drop() -> None:
            if agent is not None:
                agent.taken.set()
                agent.ended.set()

        return Opened(serve, drop)

    def claim(self, ticket: str) -> Serve | None:
        """What serves an agent's data connection presenting ``ticket``; None when the ticket
        was never issued, was claimed already, or expired."""
        pending = self.tickets.claim(ticket)
        if pending is None:
            return None

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if pending.connected.done():  # the client's side gave up waiting
                return
            data = _DataConnection(Side(reader, writer, SWITCHED))
            pending.connected.set_result(data)
            try:  # the client's side relays both connections (unless it was refused a slot)
                await asyncio.wait_for(data.taken.wait(), self.tickets.ttl)
            except TimeoutError:
                return
            await data.ended.wait()

        return serve

    async def _dial(self, node: str, opening: SessionOpen) -> _DataConnection | None:
        """The agent's data connection, or None (relay over the stream); Conflict when the
        port cannot be opened. A node whose agent said it could not dial back is not asked
        again for ``REDIAL`` seconds (a firewall would cost each forward the whole wait); one
        that answered nothing in time is (its agent dials with a shorter timeout, so that was
        the job's port, slow to accept, which must not turn everyone's forwards on the node
        to the slower relay)."""
        if self._undialled.get(node, 0.0) > self.monotonic():
            return None
        self._undialled.pop(node, None)
        ticket, pending = self.tickets.issue(node, opening.job_id)
        order = replace(opening, dial_ticket=ticket, dial_port=self.port, dial_tls=self.tls)
        try:
            answer = await self.relay.dial(node, order, pending.connected, self.wait)
        finally:
            self.tickets.revoke(ticket)
        if answer is None:
            connected: _DataConnection = pending.connected.result()
            return connected
        pending.connected.cancel()
        if answer.error:
            raise Conflict(answer.error)
        if not answer.dial_error:  # the job's port may be slow to accept: that says nothing
            log.warning(  # of the node, whose other forwards are still dialled back
                "forward of job %d on %s: no data connection within %gs; relayed over its stream",
                opening.job_id,
                node,
                self.wait,
            )
            return None
        log.warning(
            "forward of job %d on %s: %s; its forwards go over its stream for %.0fs",
            opening.job_id,
            node,
            answer.dial_error,
            REDIAL,
        )
        self._undialled[node] = self.monotonic() + REDIAL
        return None

    async def _over_stream(
        self,
        node: str,
        opening: SessionOpen,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """The fallback: the client's raw bytes through a session on the agent's stream."""
        writer.write(SWITCHED)

        async def inputs() -> AsyncGenerator[SessionInput, None]:
            while data := await reader.read(CHUNK):
                yield SessionInput(0, data=data)
            yield SessionInput(0, eof=True)

        try:
            async with contextlib.aclosing(self.relay.run(node, opening, inputs())) as outputs:
                async for out in outputs:
                    if out.data:
                        writer.write(out.data)
                        await writer.drain()
                    if out.exited or out.error:
                        break
        except NotFound as exc:  # the node went away meanwhile
            log.warning("forward of job %d: %s", opening.job_id, exc)
            return
        if writer.can_write_eof():
            writer.write_eof()
            await writer.drain()
