"""The server side of RFC 6455 WebSockets, as much as the dashboard's terminal needs: the
handshake, masked client frames (text, binary, continuation, ping, pong, close) and unmasked
server frames, a message at most ``max_message`` bytes (a longer one closes the socket with
1009), a control frame at most 125 bytes and never fragmented (else 1002), no extensions. A
ping's pong is taken by the connection before the next frame is read, so a client that sends
pings and reads nothing holds no more of the server's memory than the connection's buffer."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import struct

from rota.scheduler.http import Request

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_MESSAGE = 64 * 1024  # bytes of one client message
MAX_CONTROL = 125  # bytes of a control frame's payload (RFC 6455, 5.5)
TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA


class Closed(Exception):
    """The peer closed the socket, or broke the protocol (the socket is closed)."""


def handshake_refusal(request: Request) -> str:
    """Why ``request`` is no WebSocket opening handshake ("" when it is one)."""
    if request.method != "GET":
        return "a WebSocket opens with GET"
    if "websocket" not in request.headers.get("upgrade", "").lower():
        return "Upgrade: websocket is required"
    if "upgrade" not in request.headers.get("connection", "").lower():
        return "Connection: Upgrade is required"
    if request.headers.get("sec-websocket-version", "") != "13":
        return "Sec-WebSocket-Version: 13 is required"
    try:
        key = base64.b64decode(request.headers.get("sec-websocket-key", ""), validate=True)
    except ValueError:
        key = b""
    if len(key) != 16:
        return "Sec-WebSocket-Key: 16 bytes in base64 are required"
    return ""


def accept_head(request: Request) -> bytes:
    """The 101 answer to a handshake ``handshake_refusal`` accepted."""
    key = request.headers["sec-websocket-key"].strip().encode()
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest()).decode()
    return (
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Accept: {accept}\r\n\r\n"
    ).encode()


class WebSocket:
    """One open socket. ``receive`` is for one task; ``send`` may be called from any."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_message: int = MAX_MESSAGE,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.max_message = max_message
        self.closed = False

    async def receive(self) -> tuple[int, bytes]:
        """The next message: (TEXT or BINARY, payload). Pings are answered on the way;
        Closed at the close handshake, the connection's end or a protocol error."""
        kind, parts, size = 0, [], 0
        while True:
            opcode, final, payload = await self._frame()
            if opcode == PING:
                self._write(PONG, payload)
                await self._drained()
            elif opcode == PONG:
                continue
            elif opcode == CLOSE:
                self.close(1000)
                raise Closed("closed by the peer")
            elif (opcode in (TEXT, BINARY) and not kind) or (opcode == 0 and kind):
                kind = kind or opcode
                size += len(payload)
                if size > self.max_message:
                    self.close(1009)
                    raise Closed(f"a message over {self.max_message} bytes")
                parts.append(payload)
                if final:
                    return kind, b"".join(parts)
            else:
                self.close(1002)
                raise Closed(f"unexpected opcode {opcode}")

    async def _frame(self) -> tuple[int, bool, bytes]:
        try:
            first, second = await self.reader.readexactly(2)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
            if not second & 0x80 or length > self.max_message:
                self.close(1002 if not second & 0x80 else 1009)
                raise Closed("an unmasked or oversized frame")
            if first & 0x08 and (length > MAX_CONTROL or not first & 0x80):
                self.close(1002)
                raise Closed(f"a control frame over {MAX_CONTROL} bytes or fragmented")
            mask = await self.reader.readexactly(4)
            data = await self.reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self.closed = True
            raise Closed("the connection ended") from exc
        return first & 0x0F, bool(first & 0x80), _unmask(data, mask)

    async def send(self, opcode: int, payload: bytes) -> None:
        """Send one message and wait until the connection took it (flow control)."""
        if self.closed:
            raise Closed("the socket is closed")
        self._write(opcode, payload)
        await self.writer.drain()

    async def _drained(self) -> None:
        """Wait until the connection took what was written; Closed when it broke."""
        try:
            await self.writer.drain()
        except ConnectionError as exc:
            self.closed = True
            raise Closed("the connection ended") from exc

    def close(self, code: int = 1000) -> None:
        """Send the close frame (once)."""
        if not self.closed:
            self._write(CLOSE, struct.pack("!H", code))
            self.closed = True

    def _write(self, opcode: int, payload: bytes) -> None:
        size = len(payload)
        if size < 126:
            head = struct.pack("!BB", 0x80 | opcode, size)
        elif size < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 126, size)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 127, size)
        if not self.writer.is_closing():
            self.writer.write(head + payload)


def _unmask(data: bytes, mask: bytes) -> bytes:
    """``data`` XORed with the repeated 4-byte ``mask`` (done on integers: fast enough for
    keystrokes and pastes)."""
    whole = (mask * (len(data) // 4 + 1))[: len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(whole, "big")).to_bytes(len(data), "big")
