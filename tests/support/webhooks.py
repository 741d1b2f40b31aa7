"""A real HTTP server on 127.0.0.1 that receives job-end webhooks for tests.

``answers`` scripts the replies: each POST takes the next status (the last one repeats);
``None`` means never answer (the connection is held open until the server stops).
Webhooks go to public addresses only unless the scheduler allows more: a scheduler posting to
this server needs ``webhook_allowed_networks: LOOPBACK``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOOPBACK = ("127.0.0.0/8",)  # the scheduler setting that lets webhooks reach this server


class WebhookServer:
    """Records every POST body (parsed JSON) in ``received`` and each try in ``tries``."""

    def __init__(self, *answers: int | None) -> None:
        self.answers = list(answers) or [200]
        self.tries = 0
        self.received: list[dict[str, Any]] = []
        self._release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                answer = outer.answers[min(outer.tries, len(outer.answers) - 1)]
                outer.tries += 1
                if answer is None:
                    outer._release.wait(60)
                    return
                if 200 <= answer < 300:
                    outer.received.append(json.loads(body))
                self.send_response(answer)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook?token=s3cret"

    def __enter__(self) -> WebhookServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
