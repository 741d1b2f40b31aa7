"""The job page's terminal: ``GET /api/v1/jobs/{id}/terminal?rows=R&cols=C`` opens a WebSocket
carrying a shell in the running job's container, as ``gattach JOB`` opens one; with
``attach=1``, the job's own process instead (an interactive session's shell, as grun does).

It is the engine's interactive session of kind ``exec`` (``/bin/sh`` with a terminal; or
``attach``), so the same rights apply (``authz``: the job's owner or an admin; a refusal is 403 before the socket
opens, and is audited) and it is recorded the same way (``gattach by USER on NODE`` in the
job's events, ``Interact/exec`` in the audit log). The login cookie authenticates it, with
the session's CSRF token as ``csrf=`` (the page keeps it in its own origin's storage, so a
cookie a page on another port of this host planted opens nothing), and the browser's
``Origin`` must be this server's own.

On the socket, the browser sends binary messages (keystrokes, at most 64 KiB each) and text
messages ``{"rows": R, "cols": C}`` (a resize); the server sends binary messages (the
terminal's output) and text messages: ``{"state", "reason"}`` while the job is not yet
running, ``{"started": NODE}``, then ``{"exited": CODE}`` or ``{"error": WHY}`` at the end,
after which it closes. Both directions are bounded by the session relay's windows: a browser
that stops reading slows its own session down.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator

from rota.messages import SessionInput, SessionOutput
from rota.scheduler.engine import Engine
from rota.scheduler.facade.interactive import MAX_TERMINAL, ClientOpen, SessionEvent, Started
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web.api import Api, ApiError, Caller, Refused
from rota.scheduler.web.query import query_int
from rota.scheduler.web.sessions import Sessions
from rota.scheduler.web.slots import UserSlots
from rota.scheduler.web.websocket import (
    BINARY,
    TEXT,
    Closed,
    WebSocket,
    accept_head,
    handshake_refusal,
)

SHELL: tuple[str, ...] = ("/bin/sh",)
STALE = (
    "csrf: the terminal opens with the CSRF token of the page's own login (?csrf=), and this "
    "is not the session's: the browser's session cookie was replaced; log in again"
)


class Terminal:
    """The terminal route; ``slots`` bounds the terminals one user has open."""

    def __init__(self, engine: Engine, slots: UserSlots) -> None:
        self.engine = engine
        self.slots = slots
        self._closing: set[asyncio.Task[None]] = set()  # sessions of terminals refused 503

    def routes(self, api: Api) -> list[Route]:
        return [api.route("GET", "/api/v1/jobs/{id}/terminal", self.open, same_origin=True)]

    async def open(self, request: Request, caller: Caller) -> Response:
        """Check the request and the caller's right to enter the job, then hand the
        connection to the session (``_Session``)."""
        refusal = handshake_refusal(request)
        if refusal:
            raise ApiError(400, refusal)
        if caller.session is not None and not Sessions.csrf_ok(
            caller.session, request.query.get("csrf", "")
        ):
            raise Refused(403, STALE)
        rows = query_int(request.query, "rows", 24, 1, MAX_TERMINAL)
        cols = query_int(request.query, "cols", 80, 1, MAX_TERMINAL)
        attach = request.query.get("attach", "") in ("1", "true")
        kind, command = ("attach", ()) if attach else ("exec", SHELL)
        opening = ClientOpen(request.params["id"], kind, command, True, rows, cols)
        session = _Session()
        events = self.slots.held(
            caller.who.user,
            self.engine.interactive.interact(opening, session.inputs(), caller.who, request.peer),
        )
        try:
            first = await anext(events)  # the rights and the job's state are checked here
        except StopAsyncIteration:
            raise ApiError(409, f"job {opening.job_id} has no session to open") from None
        if isinstance(first, SessionOutput) and first.error:
            await events.aclose()
            raise ApiError(409, first.error)

        async def takeover(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(accept_head(request))
            await session.serve(WebSocket(reader, writer), first, events)

        def refused() -> None:  # the port had no connection to lend: the session ends now
            task = asyncio.get_running_loop().create_task(events.aclose())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

        return Response(101, b"", takeover=takeover, refused=refused)


class _Session:
    """One terminal: the socket's messages in, the session's events out."""

    def __init__(self) -> None:
        self.socket: WebSocket | None = None
        self.gone = asyncio.Event()

    async def inputs(self) -> AsyncGenerator[SessionInput, None]:
        """The browser's keystrokes and resizes until it closes the socket (only read once
        the session opened, so the socket is there)."""
        assert self.socket is not None
        while True:
            try:
                kind, payload = await self.socket.receive()
            except Closed:
                self.gone.set()
                return
            if kind == BINARY:
                yield SessionInput(0, data=payload)
                continue
            try:
                size = json.loads(payload)
                rows, cols = int(size["rows"]), int(size["cols"])
            except (
                ValueError,
                KeyError,
                TypeError,
                OverflowError,
                RecursionError,
            ):  # Infinity, [[[...
                continue  # not a resize: nothing else is asked of text messages
            if 0 < rows <= MAX_TERMINAL and 0 < cols <= MAX_TERMINAL:
                yield SessionInput(0, rows=rows, cols=cols)

    async def serve(
        self,
        socket: WebSocket,
        first: SessionEvent,
        events: AsyncGenerator[SessionEvent, None],
    ) -> None:
        """Relay until the session ends or the browser goes away (which ends the shell)."""
        self.socket = socket
        relay = asyncio.create_task(self._relay(first, events))
        gone = asyncio.create_task(self.gone.wait())
        try:
            await asyncio.wait((relay, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (relay, gone):
                task.cancel()
            await asyncio.gather(relay, gone, return_exceptions=True)
            await events.aclose()
            socket.close(1000)

    async def _relay(self, first: SessionEvent, events: AsyncGenerator[SessionEvent, None]) -> None:
        assert self.socket is not None
        event: SessionEvent | None = first
        while event is not None:
            await self._send(event)
            event = await anext(events, None)

    async def _send(self, event: SessionEvent) -> None:
        assert self.socket is not None
        if isinstance(event, Started):
            await self.socket.send(TEXT, json.dumps({"started": event.node}).encode())
        elif not isinstance(event, SessionOutput):
            state = {"state": event.state, "reason": event.reason}
            await self.socket.send(TEXT, json.dumps(state).encode())
        elif event.data:
            await self.socket.send(BINARY, event.data)
        elif event.exited:
            await self.socket.send(TEXT, json.dumps({"exited": event.exit_code}).encode())
        elif event.error:
            await self.socket.send(TEXT, json.dumps({"error": event.error}).encode())
        elif event.detached:  # a session's terminal that another client took over
            why = "detached: another client attached"
            await self.socket.send(TEXT, json.dumps({"error": why}).encode())
