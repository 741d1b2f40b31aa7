"""A forward's raw data connection, dialled back from the agent to the scheduler's HTTP port.

The scheduler's ``SessionOpen`` carries a single-use ticket, the HTTP port and whether it serves
TLS; the host is the one this agent's stream was dialled to (so a node behind NAT works: it
dials out, as for its stream). The request is ``GET /api/v1/forward-dial`` with ``Upgrade:
rota-tcp`` and the ticket in ``Rota-Dial-Ticket``; after the scheduler's ``101`` the connection
carries the port's bytes both ways (``rota.bytepipe``). With TLS the scheduler is verified
with the agent's CA (and its client certificate presented), as its stream is.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from rota.messages import SessionOpen

DIAL_TIMEOUT = 3.0  # seconds to connect and be answered: the scheduler waits 5 s in all, so a
# failure is told to it in time (it then relays the node's forwards over gRPC for a while)
UPGRADE = "rota-tcp"
PATH = "/api/v1/forward-dial"
TICKET_HEADER = "Rota-Dial-Ticket"
MAX_HEAD = 16 * 1024  # bytes of the scheduler's answer head


class DialError(Exception):
    """The data connection could not be made (one line, told to the scheduler)."""


class Dialer:
    """Dials data connections to the scheduler at ``address()`` (``HOST:PORT`` of its
    stream); ``tls``: (CA, client certificate, key) file paths."""

    def __init__(
        self,
        address: Callable[[], str],
        tls: tuple[str, str, str] | None,
        timeout: float = DIAL_TIMEOUT,
    ) -> None:
        self._address = address
        self._tls = tls
        self._timeout = timeout

    def connect(self, order: SessionOpen) -> tuple[socket.socket, bytes]:
        """The data connection for ``order`` once the scheduler switched it to raw bytes, and
        any bytes it already sent past its answer. DialError saying why not."""
        host = self._address().rpartition(":")[0].strip("[]")
        try:
            sock = socket.create_connection((host, order.dial_port), timeout=self._timeout)
        except OSError as exc:
            raise DialError(f"cannot connect to {host}:{order.dial_port}: {exc}") from None
        try:
            if order.dial_tls:
                sock = self._wrap(sock, host)
            sock.sendall(
                (
                    f"GET {PATH} HTTP/1.1\r\nHost: {host}:{order.dial_port}\r\n"
                    f"Connection: Upgrade\r\nUpgrade: {UPGRADE}\r\n"
                    f"{TICKET_HEADER}: {order.dial_ticket}\r\n\r\n"
                ).encode()
            )
            head, rest = _answer(sock)
        except (OSError, DialError) as exc:
            sock.close()
            raise DialError(f"{host}:{order.dial_port}: {exc}") from None
        if not head.startswith(b"HTTP/1.1 101 "):
            sock.close()
            status = head.split(b"\r\n", 1)[0].decode("latin-1", "replace")
            raise DialError(f"{host}:{order.dial_port} answered {status!r}")
        sock.settimeout(None)
        return sock, rest

    def _wrap(self, sock: socket.socket, host: str) -> socket.socket:
        import ssl

        if self._tls is None:
            raise DialError("the scheduler's HTTP port serves TLS and this agent has no CA")
        ca, cert, key = self._tls
        context = ssl.create_default_context(cafile=ca)
        if cert and key:
            context.load_cert_chain(cert, key)
        return context.wrap_socket(sock, server_hostname=host)


def _answer(sock: socket.socket) -> tuple[bytes, bytes]:
    """The scheduler's answer head and whatever came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            raise DialError("answer head too large")
        chunk = sock.recv(4096)
        if not chunk:
            raise DialError("the connection closed before an answer")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest
