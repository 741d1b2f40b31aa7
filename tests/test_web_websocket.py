"""The HTTP port's WebSocket server side (RFC 6455) over a real loopback connection: the
handshake's accept key, fragmented messages reassembled, pings answered, a frame a client may
not send (unmasked, over the message bound, a control frame over 125 bytes or fragmented)
closing the socket with its code, and at most
half the port's connections held by sockets."""

from __future__ import annotations

import asyncio
import base64
import os
import struct

from rota.scheduler.http import HttpServer, Request, Response, Route
from rota.scheduler.web.websocket import (
    BINARY,
    PING,
    PONG,
    TEXT,
    Closed,
    WebSocket,
    accept_head,
    handshake_refusal,
)

KEY = "dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455's example


def frame(opcode: int, payload: bytes, final: bool = True, masked: bool = True) -> bytes:
    mask = os.urandom(4) if masked else b""
    size = len(payload)
    second = 0x80 if masked else 0
    head = struct.pack("!B", (0x80 if final else 0) | opcode)
    if size < 126:
        head += struct.pack("!B", second | size)
    else:
        head += struct.pack("!BH", second | 126, size)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if masked else payload
    return head + mask + body


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    first, second = await reader.readexactly(2)
    size = second & 0x7F
    if size == 126:
        (size,) = struct.unpack("!H", await reader.readexactly(2))
    return first & 0x0F, await reader.readexactly(size)


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    socket = WebSocket(reader, writer, max_message=1024)
    try:
        while True:
            kind, payload = await socket.receive()
            await socket.send(kind, payload)
    except Closed:
        await writer.drain()


async def opened(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        (
            "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {KEY}\r\n\r\n"
        ).encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101 ")
    assert b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" in head
    return reader, writer


async def handler(request: Request) -> Response:
    refusal = handshake_refusal(request)
    if refusal:
        return Response(400, refusal.encode())

    async def takeover(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(accept_head(request))
        await echo(reader, writer)

    return Response(101, b"", takeover=takeover)


def test_websocket_echoes_fragments_answers_pings_and_closes_on_bad_frames() -> None:
    async def run() -> None:
        server = HttpServer([Route("GET", "/ws", handler)])
        port = await server.start("127.0.0.1:0")
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /ws HTTP/1.1\r\nHost: x\r\n\r\n")  # no upgrade asked
            assert (await reader.read()).startswith(b"HTTP/1.1 400 ")

            reader, writer = await opened(port)
            writer.write(frame(TEXT, b"hel", final=False) + frame(PING, b"p?"))
            writer.write(frame(0, b"lo") + frame(BINARY, bytes(range(200))))
            assert await read_frame(reader) == (PONG, b"p?")
            assert await read_frame(reader) == (TEXT, b"hello")
            assert await read_frame(reader) == (BINARY, bytes(range(200)))
            writer.write(frame(BINARY, b"x" * 2000))  # over the 1024-byte bound
            assert await read_frame(reader) == (8, struct.pack("!H", 1009))
            assert await reader.read() == b""  # and the connection ends

            reader, writer = await opened(port)
            writer.write(frame(TEXT, b"plain", masked=False))
            assert await read_frame(reader) == (8, struct.pack("!H", 1002))

            for bad in (frame(PING, b"p" * 126), frame(PING, b"p", final=False)):
                reader, writer = await opened(port)  # a control frame over 125 bytes, or split
                writer.write(bad)
                assert await read_frame(reader) == (8, struct.pack("!H", 1002))
        finally:
            await server.stop()

    asyncio.run(run())


def test_handshake_refusals_name_the_header() -> None:
    good = {
        "upgrade": "websocket",
        "connection": "keep-alive, Upgrade",
        "sec-websocket-version": "13",
        "sec-websocket-key": base64.b64encode(os.urandom(16)).decode(),
    }
    assert handshake_refusal(Request("GET", "/", headers=good)) == ""
    assert "Version" in handshake_refusal(
        Request("GET", "/", headers={**good, "sec-websocket-version": "8"})
    )
    assert "Key" in handshake_refusal(
        Request("GET", "/", headers={**good, "sec-websocket-key": "short"})
    )
    assert "GET" in handshake_refusal(Request("POST", "/", headers=good))


def test_sockets_hold_at_most_half_the_connections() -> None:
    async def run() -> None:
        server = HttpServer([Route("GET", "/ws", handler)], max_connections=4)
        port = await server.start("127.0.0.1:0")
        try:
            held = [await opened(port) for _ in range(2)]
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                (
                    "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                    f"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                    f"Sec-WebSocket-Key: {KEY}\r\n\r\n"
                ).encode()
            )
            assert (await reader.read()).startswith(b"HTTP/1.1 503 ")
            held[0][1].close()  # one goes away: its slot is free again
            await held[0][1].wait_closed()
            for _ in range(100):
                try:
                    await opened(port)
                    break
                except (AssertionError, asyncio.IncompleteReadError):
                    await asyncio.sleep(0.05)
            else:
                raise AssertionError("the freed slot was not given again")
        finally:
            await server.stop()

    asyncio.run(run())
