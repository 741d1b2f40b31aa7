"""A small HTTP/1.1 server on the scheduler's event loop: routes by method and path pattern,
one request and one response per connection, optional TLS.

A connection has ``head_timeout`` seconds for its TLS handshake and whole request; at most
``max_connections`` are open at once (at most half of them taken over: a WebSocket, a proxied
port, a raw forward; one more is answered 503), and a new one beyond that evicts the connection that has
been sending its request the longest (a slowloris holds no slot a quick client needs), else
the one whose client has been taking its answer the longest (nor does a client that never
reads what it asked for), or is closed at once when every slot is working on an answer.

``/metrics``, the dashboard's files and its JSON API (``rota.scheduler.web``) are its routes.
A handler gets the parsed ``Request`` and returns a ``Response``; an exception it raises is
logged and answered 500, so one bad handler never takes the port down. A response with a
``takeover`` hands the connection to it instead (a WebSocket, a proxied request, a raw
forward): it writes everything itself, or takes the socket off the loop, and the connection
closes when it returns.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote

log = logging.getLogger("rota.scheduler")
MAX_HEAD = 16 * 1024  # bytes of request line and headers
HEAD_TOO_LARGE = (
    b"request head over 16 KiB: the browser's cookies for this host count (a page on another "
    b"port of it, such as a job's web port, may have set many); clear them\n"
)
MAX_BODY = 64 * 1024  # bytes of a request body (the API's changes are small JSON objects)
READ_TIMEOUT = 10.0  # seconds for the TLS handshake and the request
MAX_CONNECTIONS = 256
STREAM_LIMIT = 64 * 1024  # bytes a read may buffer (asyncio.start_server's default)


@dataclass(frozen=True, slots=True)
class Request:
    """One parsed request. Header names are lower case; ``params`` holds the path's
    ``{name}`` segments of the route that matched; ``target`` is the request line's target as
    sent (path and query, not decoded); ``peer`` is the client's address as gRPC
    writes one (``ipv4:127.0.0.1:5000``), for the audit log."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    params: dict[str, str] = field(default_factory=dict)
    peer: str = ""
    target: str = ""

    def cookies(self, name: str) -> list[str]:
        """Every value of cookie ``name`` sent (a browser sends one per path it was set for)."""
        pairs = (c.strip().partition("=") for c in self.headers.get("cookie", "").split(";"))
        return [value.strip() for key, _, value in pairs if key.strip() == name]


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()
    takeover: Takeover | None = None
    refused: Callable[[], None] | None = None  # called instead of a takeover answered 503


Handler = Callable[[Request], Awaitable[Response]]
Takeover = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Route:
    """``method`` and ``pattern`` (``/api/v1/jobs/{id}``: a ``{name}`` matches one segment,
    a final ``{name*}`` the rest of the path) to ``handler``. A GET route answers HEAD too."""

    method: str
    pattern: str
    handler: Handler

    def match(self, path: str) -> dict[str, str] | None:
        found = _compiled(self.pattern).fullmatch(path)
        return None if found is None else {k: unquote(v) for k, v in found.groupdict().items()}


def _compiled(pattern: str) -> re.Pattern[str]:
    escaped = re.sub(r"\\\{(\w+)\\\*\\\}$", r"(?P<\1>.*)", re.escape(pattern))
    return re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", escaped))


_REASONS = {
    101: "Switching Protocols",
    200: "OK",
    201: "Created",
    204: "No Content",
    303: "See Other",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Content Too Large",
    421: "Misdirected Request",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class HttpServer:
    """Serves ``routes``; a path no route has is 404, a method its routes lack is 405."""

    def __init__(
        self,
        routes: Sequence[Route],
        max_connections: int = MAX_CONNECTIONS,
        head_timeout: float = READ_TIMEOUT,
    ) -> None:
        self.routes = list(routes)
        self.max_connections = max_connections
        self.head_timeout = head_timeout
        self._server: asyncio.Server | None = None
        self._tls: ssl.SSLContext | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._reading: dict[asyncio.StreamWriter, None] = {}  # oldest first
        self._writing: dict[asyncio.StreamWriter, None] = {}  # answers being taken, oldest first
        self._taken = 0  # connections a takeover holds now

    async def start(self, address: str, tls: ssl.SSLContext | None = None) -> int:
        """Listen on ``HOST:PORT`` (TLS with ``tls``); return the bound port (OSError when it
        cannot bind)."""
        host, _, port = address.rpartition(":")
        self._tls = tls  # the handshake is made in _serve, under the timeout and the cap
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _PausedProtocol(asyncio.StreamReader(limit=STREAM_LIMIT), self._serve),
            host.strip("[]") or "127.0.0.1",
            int(port),
        )
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _admit(self, writer: asyncio.StreamWriter) -> bool:
        """Count a new connection in, evicting the oldest one still sending its request (else
        the oldest whose answer its client is still taking) when all slots are taken; False
        (not admitted) when none is."""
        if len(self._open) - len(self._evicted()) >= self.max_connections:
            victims = self._reading or self._writing
            if not victims:
                return False
            oldest = next(iter(victims))
            del victims[oldest]
            oldest.transport.abort()
        self._open.add(writer)
        self._reading[writer] = None
        return True

    def _evicted(self) -> list[asyncio.StreamWriter]:
        return [w for w in self._open if w.transport.is_closing()]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self._admit(writer):
            writer.transport.abort()
            return
        try:
            await self._answer(reader, writer)
        finally:
            self._open.discard(writer)
            self._reading.pop(writer, None)
            self._writing.pop(writer, None)

    async def _request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> Request | Response:
        if self._tls is not None:
            await writer.start_tls(self._tls)  # resumes reading
        else:
            writer.transport.resume_reading()  # type: ignore[attr-defined]
        return await _read(reader, _peer(writer.get_extra_info("peername")))

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(self._request(reader, writer), self.head_timeout)
            self._reading.pop(writer, None)
            if writer.transport.is_closing():
                return
            if isinstance(request, Response):
                response, head_only = request, False
            else:
                response, head_only = await self._respond(request), request.method == "HEAD"
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            if writer.transport.is_closing():  # evicted, or the client gave up
                return
            response, head_only = Response(400, b"bad request\n"), False
        except (ConnectionError, ssl.SSLError):
            writer.close()
            return
        if response.takeover is not None and self._taken < self.max_connections // 2:
            self._taken += 1
            try:
                await response.takeover(reader, writer)
            except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
                pass
            finally:
                self._taken -= 1
                writer.close()
            return
        if response.takeover is not None:
            if response.refused is not None:
                response.refused()
            response = Response(503, b"too many open terminals and proxied connections\n")
        headers = "".join(f"{k}: {v}\r\n" for k, v in response.headers)
        self._writing[writer] = None
        try:
            writer.write(
                (
                    f"HTTP/1.1 {response.status} {_REASONS.get(response.status, '')}\r\n"
                    f"Content-Type: {response.content_type}\r\n"
                    f"Content-Length: {len(response.body)}\r\n"
                    f"{headers}"
                    "Connection: close\r\n\r\n"
                ).encode()
                + (b"" if head_only else response.body)
            )
            await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def _respond(self, request: Request) -> Response:
        allowed = []
        for route in self.routes:
            params = route.match(request.path)
            if params is None:
                continue
            allowed.append(route.method)
            if route.method == request.method or (
                request.method == "HEAD" and route.method == "GET"
            ):
                try:
                    return await route.handler(dataclasses.replace(request, params=params))
                except Exception:
                    log.exception("HTTP handler for %s %s failed", request.method, request.path)
                    return Response(500, b"internal error\n")
        if not allowed:
            return Response(404, b"not found\n")
        methods = ", ".join(sorted(set(allowed)))
        return Response(405, f"allowed: {methods}\n".encode(), headers=(("Allow", methods),))


class _PausedProtocol(asyncio.StreamReaderProtocol):
    """A stream that reads nothing until ``_serve`` has admitted it and, with TLS, started the
    handshake (bytes read before that would be lost to the TLS layer)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.pause_reading()  # type: ignore[attr-defined]
        super().connection_made(transport)


def _peer(address: object) -> str:
    """A socket's peer address in gRPC's form ("" when unknown)."""
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"ipv6:[{host}]:{port}" if ":" in str(host) else f"ipv4:{host}:{port}"
    return ""


async def _read(reader: asyncio.StreamReader, peer: str) -> Request | Response:
    """The request on ``reader``, or the error response when it is malformed or too large."""
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > MAX_HEAD:
        return Response(400, HEAD_TOO_LARGE)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return Response(400, b"bad request line\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        return Response(400, b"bad Content-Length\n")
    if length < 0:
        return Response(400, b"bad Content-Length\n")
    if length > MAX_BODY:
        return Response(413, f"request body over {MAX_BODY} bytes\n".encode())
    body = await reader.readexactly(length) if length else b""
    path, _, query = parts[1].partition("?")
    return Request(
        parts[0], path, dict(parse_qsl(query)), headers, body, peer=peer, target=parts[1]
    )
