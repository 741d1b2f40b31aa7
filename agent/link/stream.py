"""The agent's one bidirectional stream to the scheduler, with reconnects and backoff.

With ``convert.py``, the only agent modules that import generated code: everything else in the
agent speaks the wire model (``rota.messages``).
"""

from __future__ import annotations

import logging
import queue
import random
import threading
from collections.abc import Callable, Iterator

import grpc

from rota.agent.link.convert import message_to_pb, order_from_pb
from rota.messages import AgentMessage, AgentOrder, Hello, LogData, Welcome
from rota.tls import channel_credentials
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc

log = logging.getLogger("rota.agent")

CHANNEL_OPTIONS = [
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", 64 * 2**20),
]


class Rejected(Exception):
    """The scheduler refused this agent (unknown node or wrong token): do not retry."""


class Link:
    """Keeps the stream open; ``send_*`` queue messages for the current stream.

    ``address``: one scheduler ``HOST:PORT`` or several, comma-separated (a leader and its
    standbys): when a stream cannot be opened or breaks, the next one is dialled, and the
    backoff grows only once every address failed in a row.

    ``hello`` builds the hello (re-read on every reconnect); ``on_order`` receives each order
    but pongs; ``on_disconnect`` runs when a stream that was welcomed ends. ``monotonic`` is the
    clock ``last_heard`` and the reconnect backoff are read from.
    """

    def __init__(
        self,
        address: str,
        hello: Callable[[], Hello],
        on_order: Callable[[AgentOrder], None],
        monotonic: Callable[[], float],
        on_disconnect: Callable[[], None] = lambda: None,
        tls: tuple[str, str, str] | None = None,
    ) -> None:
        """``tls``: (CA, client certificate, key) file paths; the scheduler is verified against
        the CA and, when both are given, the certificate is presented (mutual TLS)."""
        self._addresses = [one.strip() for one in address.split(",")]
        self._at = 0  # the address dialled now
        self._credentials = channel_credentials(*tls) if tls else None
        self._closed_hint = (  # gRPC says only "Socket closed" when the TLS handshake is refused
            "if the scheduler serves TLS, set ca (--ca)"
            if not tls
            else "if the scheduler requires client certificates (tls_client_ca), set cert and "
            "key (--cert, --key: node-NAME.pem from rota certs init)"
            if not tls[1]
            else ""
        )
        self._hello = hello
        self._on_order = on_order
        self._monotonic = monotonic
        self._on_disconnect = on_disconnect
        self._outbox: queue.Queue[pb.AgentMessage | None] = queue.Queue()
        self._stop = threading.Event()
        self.connected = threading.Event()
        self.last_heard = monotonic()  # when the scheduler last sent anything
        self._call: grpc.Future | None = None

    # ------------------------------------------------------------ sending

    def send(self, msg: AgentMessage) -> None:
        """Queue a message for the current stream (dropped when the stream breaks)."""
        self._outbox.put(message_to_pb(msg))

    def send_log(
        self, request_id: int, data: bytes = b"", eof: bool = False, error: str = ""
    ) -> None:
        self.send(LogData(request_id, data, eof, error))

    # ------------------------------------------------------------ loop

    @property
    def address(self) -> str:
        """The scheduler address dialled now."""
        return self._addresses[self._at]

    def drop(self) -> None:
        """Abandon the current stream (it looks dead); ``run`` reconnects."""
        call = self._call
        if call is not None:
            call.cancel()

    def stop(self) -> None:
        self._stop.set()
        self._outbox.put(None)

    def run(self) -> None:
        """Connect, serve, and reconnect with capped exponential backoff until stopped.

        Raises Rejected when the scheduler refuses the node's name or token.
        """
        backoff = 0.2
        while not self._stop.is_set():
            started = self._monotonic()
            try:
                self._serve_once()
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                    raise Rejected(exc.details() if hasattr(exc, "details") else str(exc)) from None
                details = (exc.details() if hasattr(exc, "details") else "") or ""
                closed = (  # never welcomed: refused at the handshake, not a broken stream
                    "socket closed" in details.lower()
                    and not self.connected.is_set()
                    and self._closed_hint
                )
                log.warning(
                    "scheduler %s unreachable or stream broken (%s)%s; retrying",
                    self.address,
                    code.name if code else exc,
                    f": the connection was closed at once: {self._closed_hint}" if closed else "",
                )
            finally:
                if self.connected.is_set():
                    self.connected.clear()
                    self._on_disconnect()
            if self._stop.is_set():
                return
            if self._monotonic() - started > 10:
                backoff = 0.2
            self._at = (self._at + 1) % len(self._addresses)
            if self._at == 0 or self._monotonic() - started > 10:
                self._stop.wait(backoff * (1 + random.random() / 2))
                backoff = min(backoff * 2, 5.0)

    def _serve_once(self) -> None:
        hello = message_to_pb(self._hello())
        # drop what was queued for a dead stream: reports are re-sent from the runtime's state
        while not self._outbox.empty():
            self._outbox.get_nowait()
        channel = (
            grpc.secure_channel(self.address, self._credentials, options=CHANNEL_OPTIONS)
            if self._credentials
            else grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)
        )
        with channel:
            stub = pb_grpc.AgentServiceStub(channel)
            responses = stub.Connect(self._requests(hello))
            self._call = responses
            self.last_heard = self._monotonic()
            try:
                for msg in responses:
                    self.last_heard = self._monotonic()
                    order = order_from_pb(msg)
                    if isinstance(order, Welcome):
                        self.connected.set()
                    self._on_order(order)
                    if self._stop.is_set():
                        break
            finally:
                self._call = None
                responses.cancel()
                self._outbox.put(None)

    def _requests(self, hello: pb.AgentMessage) -> Iterator[pb.AgentMessage]:
        yield hello
        while True:
            msg = self._outbox.get()
            if msg is None:
                return
            yield msg
