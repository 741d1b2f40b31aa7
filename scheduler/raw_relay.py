"""Two connections of the HTTP port joined as raw byte streams, both ways, off the event loop.

A plain connection is taken from asyncio (its descriptor duplicated, the transport dropped,
the bytes its reader had already buffered kept) and the pair is copied by two blocking
threads (``rota.bytepipe``: ``splice``, half-closes passed on). A TLS connection cannot leave
the loop (its TLS state is asyncio's): such a pair is copied on the loop in large chunks,
and as TLS cannot be half-closed there, the end of either direction ends both.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from dataclasses import dataclass

from rota.bytepipe import relay

CHUNK = 256 * 1024  # bytes read at once on the loop (TLS)


@dataclass(frozen=True, slots=True)
class Side:
    """One connection and the head to write to it before its bytes (a ``101`` answer)."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    head: bytes


async def join(a: Side, b: Side) -> None:
    """Relay ``a`` <-> ``b`` until both directions ended or either broke; both are closed."""
    if a.writer.get_extra_info("sslcontext") or b.writer.get_extra_info("sslcontext"):
        await _join_on_loop(a, b)
        return
    try:
        sock_a, left_a = _detach(a)
    except OSError:  # the connection ended meanwhile
        b.writer.close()
        return
    try:
        sock_b, left_b = _detach(b)
    except OSError:
        sock_a.close()
        return
    loop = asyncio.get_running_loop()
    ended = loop.create_future()

    def run() -> None:
        try:
            sock_a.sendall(a.head)
            sock_b.sendall(b.head)
            relay(sock_a, sock_b, left_a, left_b)
        except OSError:
            for sock in (sock_a, sock_b):
                sock.close()
        finally:
            loop.call_soon_threadsafe(_settle, ended)

    threading.Thread(target=run, name="raw-forward", daemon=True).start()
    await asyncio.shield(ended)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _detach(side: Side) -> tuple[socket.socket, bytes]:
    """A blocking socket of the connection's own, and the bytes read but not yet taken."""
    transport = side.writer.transport
    transport.pause_reading()  # type: ignore[attr-defined]
    left = bytes(getattr(side.reader, "_buffer", b""))
    fd = os.dup(transport.get_extra_info("socket").fileno())
    transport.abort()  # closes asyncio's descriptor only: the connection stays with ours
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    return sock, left


async def _join_on_loop(a: Side, b: Side) -> None:
    for side in (a, b):
        side.writer.write(side.head)
    copies = [
        asyncio.create_task(_copy(a.reader, b.writer)),
        asyncio.create_task(_copy(b.reader, a.writer)),
    ]
    try:
        await asyncio.wait(copies, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in copies:
            task.cancel()
        await asyncio.gather(*copies, return_exceptions=True)
        for side in (a, b):
            side.writer.close()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """``reader`` to ``writer`` until it ends or either breaks."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        return
