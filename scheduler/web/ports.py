"""A job's web port on the HTTP port: ``/jobs/{id}/port/{port}/PATH?QUERY`` is answered by
whatever listens on TCP ``port`` inside the running job's container (Jupyter, TensorBoard, an
httpd), asked for ``/PATH?QUERY``; ``/jobs/{id}/app/{port}/PATH?QUERY`` is asked for that
whole path, for an app told it as its base (Jupyter's ``--ServerApp.base_url``).

Each request is the engine's interactive session of kind ``forward``, as ``rota forward`` opens
one per connection: the same rights (``authz``: the job's owner or an admin; 403 otherwise, and
audited) and the same record (``port forward by USER on NODE`` in the job's events,
``Interact/forward`` in the audit log). The login cookie authenticates it and a browser's
``Origin`` must be this server's own. The request goes on with ``Connection: close`` and
without the dashboard's session cookie (or a bearer token), and the answer comes back as the
app wrote it, less any ``Set-Cookie`` of the dashboard's cookie. A WebSocket upgrade passes
through, both ways, until either side closes. Request bodies are bounded as the HTTP port
bounds them (64 KiB).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from rota.messages import SessionInput, SessionOutput
from rota.scheduler.engine import Engine
from rota.scheduler.facade.interactive import ClientOpen, SessionEvent, Waiting
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web.api import Api, ApiError, Caller
from rota.scheduler.web.sessions import COOKIE

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
WAYS = ("port", "app")  # the app is asked for the path under the prefix / the whole path
HOP_BY_HOP = frozenset(
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "transfer-encoding",
        "proxy-authorization",
        "content-length",
    ]
)
MAX_HEAD = 64 * 1024  # bytes of the app's answer's head that are looked at
CHUNK = 64 * 1024  # bytes read from the browser at once (an upgraded connection)


class WebPorts:
    """The proxy's routes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def routes(self, api: Api) -> list[Route]:
        routes = []
        for way in WAYS:
            base = f"/jobs/{{id}}/{way}/{{port}}"
            routes.append(api.route("GET", base, self.slash))
            routes += [
                api.route(method, base + "/{rest*}", self.proxy, same_origin=True)
                for method in METHODS
            ]
        return routes

    async def slash(self, request: Request, caller: Caller) -> Response:
        """The port's root with its slash, so relative links resolve under it."""
        return Response(303, b"", headers=(("Location", request.path + "/"),))

    async def proxy(self, request: Request, caller: Caller) -> Response:
        """Check the port and the caller's right to enter the job, then hand the connection
        to the relay (``_Exchange``)."""
        text = request.params["port"]
        if not text.isdigit() or not 1 <= int(text) <= 65535:
            raise ApiError(400, f"port: {text[:20]!r} is not a TCP port (1-65535)")
        whole = request.path.split("/")[3] == "app"
        exchange = _Exchange(_head(request, whole, bearer=caller.session is None))
        opening = ClientOpen(request.params["id"], "forward", port=int(text))
        events = self.engine.interactive.interact(
            opening, exchange.inputs(), caller.who, request.peer
        )
        try:
            first = await anext(events)  # the rights and the job's state are checked here
        except StopAsyncIteration:
            raise ApiError(502, "the job's port gave no answer") from None
        if isinstance(first, SessionOutput):
            await events.aclose()
            raise ApiError(409, first.error or "the job's port gave no answer")
        if isinstance(first, Waiting):
            await events.aclose()
            raise ApiError(409, f"job {opening.job_id} is not running yet")

        async def takeover(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await exchange.serve(reader, writer, events)

        return Response(200, b"", takeover=takeover)


def _head(request: Request, whole: bool, bearer: bool) -> bytes:
    """The request as the app gets it: its path under ``/jobs/ID/port/PORT`` (``whole``: its
    whole path), its own headers (not the
    dashboard's cookie, nor a bearer token that logged the caller in) and its body."""
    target = request.target if whole else "/" + "/".join(request.target.split("/")[5:])
    upgrade = "websocket" in request.headers.get("upgrade", "").lower()
    lines = [f"{request.method} {target} HTTP/1.1"]
    for name, value in request.headers.items():
        if name in HOP_BY_HOP or (bearer and name == "authorization"):
            continue
        if name == "cookie":
            value = "; ".join(
                c.strip() for c in value.split(";") if c.strip().partition("=")[0] != COOKIE
            )
            if not value:
                continue
        lines.append(f"{name}: {value}")
    if upgrade:
        lines += ["connection: Upgrade", "upgrade: websocket"]
    else:
        lines.append("connection: close")
    if request.body or request.method in ("POST", "PUT", "PATCH"):
        lines.append(f"content-length: {len(request.body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + request.body


class _Exchange:
    """One proxied request: its bytes to the app, the app's answer to the browser."""

    def __init__(self, head: bytes) -> None:
        self.head = head
        self.upgrade = b"\r\nupgrade: websocket\r\n" in head
        self.reader: asyncio.StreamReader | None = None
        self.gone = asyncio.Event()

    async def inputs(self) -> AsyncGenerator[SessionInput, None]:
        """The request; for an upgrade, then whatever the browser sends until it closes."""
        yield SessionInput(0, data=self.head)
        if not self.upgrade or self.reader is None:
            await self.gone.wait()  # the app's answer ends the session
            return
        while data := await self.reader.read(CHUNK):
            yield SessionInput(0, data=data)
        self.gone.set()

    async def serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        events: AsyncGenerator[SessionEvent, None],
    ) -> None:
        """Relay the answer until the app or (an upgraded) browser closes."""
        self.reader = reader
        relay = asyncio.create_task(self._answer(writer, events))
        gone = asyncio.create_task(self.gone.wait())
        try:
            await asyncio.wait((relay, gone), return_when=asyncio.FIRST_COMPLETED)
            answered = relay.done() and not relay.cancelled() and relay.exception() is None
            if answered and not relay.result():
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        finally:
            self.gone.set()
            for task in (relay, gone):
                task.cancel()
            await asyncio.gather(relay, gone, return_exceptions=True)
            await events.aclose()
            await writer.drain()

    async def _answer(
        self, writer: asyncio.StreamWriter, events: AsyncGenerator[SessionEvent, None]
    ) -> bool:
        """Write the app's answer (its head filtered); whether it wrote any."""
        head, body_started = b"", False
        async for event in events:
            if not isinstance(event, SessionOutput) or not event.data:
                continue
            if body_started:
                writer.write(event.data)
                await writer.drain()
                continue
            head += event.data
            end = head.find(b"\r\n\r\n")
            if end < 0 and len(head) < MAX_HEAD:
                continue
            split = end + 4 if end >= 0 else len(head)
            writer.write(_filtered(head[:split]) + head[split:])
            await writer.drain()
            body_started = True
        if head and not body_started:
            writer.write(head)
        return bool(head)


def _filtered(head: bytes) -> bytes:
    """The app's answer head less any ``Set-Cookie`` of the dashboard's cookie."""
    kept = [
        line
        for line in head.split(b"\r\n")
        if not line.lower().replace(b" ", b"").startswith(b"set-cookie:" + COOKIE.encode() + b"=")
    ]
    return b"\r\n".join(kept)
