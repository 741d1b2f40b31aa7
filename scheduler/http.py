"""A small HTTP/1.1 server on the scheduler's event loop: GET routes by path, one response per
connection. ``/metrics`` lives here; the dashboard and its JSON API are added as routes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger("rota.scheduler")
MAX_HEAD = 16 * 1024  # bytes of request line and headers
READ_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


Handler = Callable[[], Awaitable[Response]]
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
}


class HttpServer:
    """Serves ``routes`` (path -> handler) for GET and HEAD; anything else is 404 or 405."""

    def __init__(self, routes: dict[str, Handler]) -> None:
        self.routes = routes
        self._server: asyncio.Server | None = None

    async def start(self, address: str) -> int:
        """Listen on ``HOST:PORT``; return the bound port (OSError when it cannot bind)."""
        host, _, port = address.rpartition(":")
        self._server = await asyncio.start_server(
            self._serve, host.strip("[]") or "127.0.0.1", int(port)
        )
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
            response, head_only = await self._respond(head)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            response, head_only = Response(400, b"bad request\n"), False
        except ConnectionError:
            writer.close()
            return
        try:
            writer.write(
                (
                    f"HTTP/1.1 {response.status} {_REASONS.get(response.status, '')}\r\n"
                    f"Content-Type: {response.content_type}\r\n"
                    f"Content-Length: {len(response.body)}\r\n"
                    "Connection: close\r\n\r\n"
                ).encode()
                + (b"" if head_only else response.body)
            )
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _respond(self, head: bytes) -> tuple[Response, bool]:
        if len(head) > MAX_HEAD:
            return Response(400, b"request head too large\n"), False
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return Response(400, b"bad request line\n"), False
        method, target = parts[0], parts[1]
        handler = self.routes.get(target.split("?", 1)[0])
        if handler is None:
            return Response(404, b"not found\n"), False
        if method not in ("GET", "HEAD"):
            return Response(405, b"only GET and HEAD\n"), False
        try:
            return await handler(), method == "HEAD"
        except Exception:
            log.exception("HTTP handler for %s failed", target)
            return Response(500, b"internal error\n"), False
