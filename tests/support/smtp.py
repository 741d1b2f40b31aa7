"""A tiny SMTP server on 127.0.0.1 for tests: it takes every message and keeps it (parsed), as a
lab's relay would take rota's job mail."""

from __future__ import annotations

import socketserver
import threading
from email import message_from_bytes, policy
from email.message import EmailMessage
from types import TracebackType


class _Session(socketserver.StreamRequestHandler):
    server: _Server

    def _say(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        self._say("220 test-relay ESMTP")
        sender, recipients = "", []
        while line := self.rfile.readline():
            verb = line.decode(errors="replace").strip().split(" ", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self._say("250 test-relay")
            elif verb == "MAIL":
                sender, recipients = line.decode().split(":", 1)[1].strip(" <>\r\n"), []
                self._say("250 OK")
            elif verb == "RCPT":
                recipients.append(line.decode().split(":", 1)[1].strip(" <>\r\n"))
                self._say("250 OK")
            elif verb == "DATA":
                self._say("354 end with <CRLF>.<CRLF>")
                data = b""
                while (chunk := self.rfile.readline()) not in (b".\r\n", b""):
                    data += chunk[1:] if chunk.startswith(b"..") else chunk
                self.server.received(sender, recipients, data)
                self._say("250 OK queued")
            elif verb == "QUIT":
                self._say("221 bye")
                return
            else:
                self._say("250 OK")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Session)
        self.lock = threading.Lock()
        self.mails: list[tuple[str, list[str], EmailMessage]] = []

    def received(self, sender: str, recipients: list[str], data: bytes) -> None:
        message = message_from_bytes(data, policy=policy.default)
        with self.lock:
            self.mails.append((sender, recipients, message))  # type: ignore[arg-type]


class SmtpRelay:
    """``with SmtpRelay() as relay``: ``relay.address`` to give rota, ``relay.mails()`` what
    arrived: (envelope sender, recipients, message)."""

    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def mails(self) -> list[tuple[str, list[str], EmailMessage]]:
        with self._server.lock:
            return list(self._server.mails)

    def __enter__(self) -> SmtpRelay:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
