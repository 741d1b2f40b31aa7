"""Interactive sessions in a job's container through the Docker engine: the job's own process
(attach), a command (exec) or a TCP port (exec of ``nc``).

A session is a raw socket to the engine (``SessionHandle``); ``agent/sessions.py`` pumps it.
Exec sessions run as the container's user, so ``gattach`` works as the job's user.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from typing import Any

from docker.errors import APIError, DockerException

from rota.agent.runtime.engine_args import ENGINE_DOWN, engine_message
from rota.messages import SessionOpen

SHELL = ("/bin/sh",)
FORWARDER = "nc"  # the image's netcat reaches the port: containers may have no network at all


class SessionError(Exception):
    """The session could not open (one line, sent to the client)."""


@dataclass
class SessionHandle:
    """A session's socket to the engine. ``multiplexed``: Docker's 8-byte frame headers
    separate stdout from stderr (no terminal)."""

    api: Any
    sock: socket.socket
    multiplexed: bool
    container_id: str
    exec_id: str = ""

    def resize(self, rows: int, cols: int) -> None:
        try:
            if self.exec_id:
                self.api.exec_resize(self.exec_id, height=rows, width=cols)
            else:
                self.api.resize(self.container_id, rows, cols)
        except (DockerException, *ENGINE_DOWN):
            pass  # a resize racing the end of the process

    def exit_code(self) -> int | None:
        """The process's exit code once it ended; None when the engine cannot say."""
        try:
            if not self.exec_id:
                return int(self.api.wait(self.container_id, timeout=30)["StatusCode"])
            for _ in range(300):
                info = self.api.exec_inspect(self.exec_id)
                if not info.get("Running"):
                    return int(info.get("ExitCode") or 0)
                time.sleep(0.1)
        except (DockerException, *ENGINE_DOWN):
            return None
        return None


def open_session(api: Any, container_id: str, request: SessionOpen) -> SessionHandle:
    """Open ``request`` in container ``container_id``; SessionError saying why not."""
    try:
        config = api.inspect_container(container_id).get("Config") or {}
        if request.kind == "attach":
            if not config.get("OpenStdin"):
                raise SessionError(
                    f"job {request.job_id} was not started by grun: use gattach to open a "
                    "shell in it"
                )
            params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1, "logs": 1}
            sock = api.attach_socket(container_id, params=params)
            # the engine accepts an attach to a stopped container and then sends nothing:
            # the process must still run once the attach is in place
            if not api.inspect_container(container_id).get("State", {}).get("Running"):
                _raw(sock).close()
                raise SessionError(f"job {request.job_id}'s process has ended")
            tty = bool(config.get("Tty"))
            return SessionHandle(api, _raw(sock), not tty, container_id)
        if request.kind == "forward":
            command: tuple[str, ...] = (FORWARDER, "127.0.0.1", str(request.port))
            tty = False
        else:
            command, tty = request.command or SHELL, request.tty
        exec_id = api.exec_create(
            container_id, list(command), stdin=True, tty=tty, user=config.get("User") or ""
        )["Id"]
        sock = api.exec_start(exec_id, socket=True, tty=tty)
        return SessionHandle(api, _raw(sock), not tty, container_id, exec_id)
    except (APIError, DockerException) as exc:
        raise SessionError(engine_message(exc)) from None
    except ENGINE_DOWN as exc:
        raise SessionError(f"container engine not answering: {exc}") from None


def _raw(sock: Any) -> socket.socket:
    """The socket under docker-py's wrapper (a SocketIO over a Unix socket)."""
    raw = getattr(sock, "_sock", sock)
    raw.settimeout(None)
    return raw  # type: ignore[no-any-return]
