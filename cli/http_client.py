"""The commands' short way to the scheduler: its HTTP JSON API instead of gRPC, so that ``gsub``
and ``gqueue`` start without importing grpc or protobuf (docs/web.md, "Routes for the
commands").

Where: ``Target.http`` (``ROTA_HTTP``, ``http:`` in the config file, or the default port beside
the default scheduler). The same token goes as ``Authorization: Bearer``; with the cluster's CA
(``--ca``, ``ROTA_CA``, ``ca:``) the request goes over TLS verified by it, presenting the client
certificate when one is set. A token never goes in plaintext off this machine here: without a
CA, only a loopback address is used. Whenever this way does not answer (nothing listens, TLS
fails, an older scheduler without the routes, a timeout, a server error), a method returns None
and the command asks over gRPC instead; a submission is then sent with the same request ids, so
the scheduler stores it once. When the scheduler answers with a refusal, the method raises the
``CliError`` the gRPC client would raise for it.

A tiny HTTP/1.1 client over a socket: ``http.client`` would cost more to import than it saves.
"""

from __future__ import annotations

import _socket
import json
from typing import Any
from urllib.parse import quote, urlencode

from rota.cli.errors import CliError
from rota.cli.target import Target, resolve_target

CONNECT_TIMEOUT = 5.0  # seconds to open the connection (then gRPC is tried)
REPLY_TIMEOUT = 30.0  # seconds for the answer, as the gRPC client's RPC_TIMEOUT
MAX_BODY = 60 * 1024  # bytes of a request the scheduler takes (its limit is 64 KiB)


class HttpClient:
    """Requests to one scheduler's HTTP API with one token."""

    def __init__(self, target: Target, token: str, host: str, port: int) -> None:
        self.target = target
        self.token = token
        self.host = host
        self.port = port

    def submit(self, items: list[dict[str, Any]], test_only: bool) -> list[dict[str, Any]] | None:
        """``SubmitJobs`` (items: ``client_request_id``, ``source``, ``spec`` as
        ``rota.wire.spec_fields``): one ``{client_request_id, job_ids, duplicate, reason}``
        per item, or None (ask gRPC)."""
        body = json.dumps({"items": items, "test_only": test_only}).encode()
        if len(body) > MAX_BODY:
            return None  # gRPC takes larger requests
        jobs = _objects(self._call("POST", "/api/v1/jobs", body), "job_ids")
        return None if jobs is None else [{"warnings": [], **job} for job in jobs]

    def queue(
        self,
        ids: list[str],
        users: list[str],
        accounts: list[str],
        states: list[str],
        all_states: bool,
        with_priority: bool = False,
    ) -> list[dict[str, Any]] | None:
        """``ListJobs``, every page: the ``gqueue --json`` objects (``with_priority``: with
        ``priority``), or None (ask gRPC)."""
        flags = {"all_states": all_states, "with_priority": with_priority}
        return _objects(self._list(ids, users, accounts, states, flags), "id")

    def steps(
        self, ids: list[str], users: list[str], accounts: list[str]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """The pending and active jobs (``gqueue --json`` objects) with their running srun
        steps (``gqueue -s --json`` objects), or None (ask gRPC)."""
        reply = self._list(ids, users, accounts, [], {"with_steps": True})
        jobs, steps = _objects(reply, "id"), _objects(reply, "id", "steps")
        return None if jobs is None or steps is None else (jobs, steps)

    def _list(
        self,
        ids: list[str],
        users: list[str],
        accounts: list[str],
        states: list[str],
        flags: dict[str, bool],
    ) -> Any:
        filters = {"ids": ids, "users": users, "accounts": accounts, "states": states}
        query = {name: ",".join(values) for name, values in filters.items() if values}
        query.update((name, "1") for name, flag in flags.items() if flag)
        path = "/api/v1/queue" + (f"?{urlencode(query, quote_via=quote)}" if query else "")
        return self._call("GET", path)

    def whoami(self) -> str | None:
        """The user of the token, or None (ask gRPC)."""
        reply = self._call("GET", "/api/v1/session")
        user = reply.get("user") if isinstance(reply, dict) else None
        return user if isinstance(user, str) and user else None

    def _call(self, method: str, path: str, body: bytes = b"") -> Any:
        """The JSON answer, None when there is none to use, CliError for a refusal."""
        try:
            status, kind, data = self._exchange(method, path, body)
        except (OSError, ValueError):  # ssl.SSLError is an OSError
            return None
        return _answer(status, kind, data)

    def upgrade(self, path: str, protocol: str) -> tuple[Any, bytes] | None:
        """A connection that ``GET path`` switched to ``protocol`` (raw bytes after the
        ``101``), and the bytes that came past the answer; None when this way does not
        answer (as ``_call``), CliError for a refusal."""
        import socket

        head = (
            f"GET {path} HTTP/1.1\r\nHost: {self.target.http}\r\n"
            f"Authorization: Bearer {self.token}\r\nConnection: Upgrade\r\n"
            f"Upgrade: {protocol}\r\n\r\n"
        )
        try:
            sock = socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT)
        except OSError:
            return None
        try:
            if self.target.ca:
                sock = self._wrap(sock)
            sock.settimeout(REPLY_TIMEOUT)
            sock.sendall(head.encode())
            data = b""
            while b"\r\n\r\n" not in data and (chunk := sock.recv(65536)):
                data += chunk
            if data.startswith(b"HTTP/1.1 101 "):
                sock.settimeout(None)
                return sock, data.partition(b"\r\n\r\n")[2]
            while chunk := sock.recv(65536):
                data += chunk
            sock.close()
            _answer(*_parse(data))  # CliError for a refusal
            return None
        except (OSError, ValueError):
            sock.close()
            return None

    def _exchange(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        """Send one request; (status, content type, body) of the answer."""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.target.http}\r\n"
            f"Authorization: Bearer {self.token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        sock = self._tls() if self.target.ca else self._plain()
        try:
            sock.settimeout(REPLY_TIMEOUT)
            sock.sendall(head.encode() + body)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        finally:
            sock.close()
        return _parse(b"".join(chunks))

    def _plain(self) -> _socket.socket:
        """A connection from the C module itself: ``socket`` costs ~4 ms to import."""
        # an ASCII name as bytes (getaddrinfo takes them): no IDNA codec to import (~1 ms)
        host = self.host.encode() if self.host.isascii() else self.host
        failed: OSError = OSError(f"{self.host} has no address")
        for family, kind, proto, _, address in _socket.getaddrinfo(
            host, self.port, 0, _socket.SOCK_STREAM
        ):
            sock = _socket.socket(family, kind, proto)
            try:
                sock.settimeout(CONNECT_TIMEOUT)
                sock.connect(address)
                return sock
            except OSError as exc:
                sock.close()
                failed = exc
        raise failed

    def _tls(self) -> Any:
        """A connection verified with the cluster's CA (presenting the client certificate)."""
        import socket

        sock = socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT)
        try:
            return self._wrap(sock)
        except BaseException:
            sock.close()
            raise

    def _wrap(self, sock: Any) -> Any:
        import ssl

        context = ssl.create_default_context(cafile=self.target.ca)
        if self.target.cert and self.target.key:
            context.load_cert_chain(self.target.cert, self.target.key)
        return context.wrap_socket(sock, server_hostname=self.host)


def _answer(status: int, kind: str, data: bytes) -> Any:
    """The JSON answer of a 200, None for an answer not to use, CliError for a refusal."""
    if not kind.startswith("application/json"):
        return None  # not the API's answer (an older scheduler: 404, 405)
    try:
        reply = json.loads(data)
    except ValueError:
        return None
    if status == 200:
        return reply
    message = str(reply.get("error", "")) if isinstance(reply, dict) else ""
    if status == 400:
        raise CliError(message or "invalid request", 2)
    if status == 401:
        raise CliError(f"not signed in to the rota scheduler: {message}", 1)
    if status == 403:
        raise CliError(f"permission denied: {message}", 1)
    if status in (404, 409):
        raise CliError(message, 1)
    return None  # 413, 5xx: gRPC may yet answer


def _objects(reply: Any, key: str, field: str = "jobs") -> list[dict[str, Any]] | None:
    """The ``field`` list of an answer, each an object with ``key``; None for any other answer
    (an older or another server: gRPC is asked, with the same request ids)."""
    jobs = reply.get(field) if isinstance(reply, dict) else None
    if not isinstance(jobs, list) or not all(isinstance(j, dict) and key in j for j in jobs):
        return None
    return jobs


def _parse(raw: bytes) -> tuple[int, str, bytes]:
    """(status, content type, body) of a whole HTTP/1.1 answer; ValueError when malformed or
    cut short."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if not sep or len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise ValueError("not an HTTP answer")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if int(headers.get("content-length", len(body))) != len(body):
        raise ValueError("answer cut short")
    return int(parts[1]), headers.get("content-type", ""), body


def _loopback(host: str) -> bool:
    """Whether ``host`` (a name or an IP) is this machine, from the text alone."""
    if host == "localhost":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_client(flag: str | None, ca: str | None = None) -> HttpClient | None:
    """A client for the scheduler's HTTP API, or None when gRPC must be used: no API address
    applies (``Target.http``), no token (gRPC says why it is needed), or no TLS to another
    machine (gRPC refuses, or warns under ``ROTA_INSECURE``)."""
    from rota.credentials import CredentialsError, read_token

    target = resolve_target(flag, ca)
    host, _, port = target.http.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or (not target.ca and not _loopback(host)):
        return None
    try:
        token = read_token()
    except CredentialsError as exc:
        raise CliError(str(exc), 1) from None
    if not token or not token.isprintable() or " " in token:
        return None
    return HttpClient(target, token, host, int(port))
