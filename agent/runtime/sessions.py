"""Interactive sessions in a job's container through the Docker engine: the job's own process
(attach), a command (exec) or a TCP port.

A session is a raw socket (``SessionHandle``); ``agent/sessions.py`` pumps it. Exec sessions
run as the container's user, so ``gattach`` works as the job's user. A port is reached from
inside the container's network namespace (containers may have no network at all): a thread
of the agent enters it and connects to 127.0.0.1:PORT there, which needs CAP_SYS_ADMIN (an
agent running as root has it); without it, the image's ``nc`` is run by exec instead (several
times slower: the engine's exec stream is the bottleneck).
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

from docker.errors import APIError, DockerException

from rota.agent.runtime.engine_args import ENGINE_DOWN, engine_message
from rota.messages import SessionOpen

SHELL = ("/bin/sh",)
FORWARDER = "nc"  # without CAP_SYS_ADMIN, the image's netcat reaches the port
CLONE_NEWNET = 0x40000000


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
    direct: bool = False  # a TCP connection of the agent's own (nothing to ask the engine)
    early: bytes = b""  # the stream's first bytes, read with the engine's answer: before sock's

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
        if self.direct:
            return 0
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


def open_session(api: Any, container_id: str, request: SessionOpen, node: str) -> SessionHandle:
    """Open ``request`` in container ``container_id`` ("": the attempt does not run on
    ``node``); SessionError saying why not."""
    if not container_id:
        raise SessionError(
            f"job {request.job_id} attempt {request.attempt} is not running on node {node}"
        )
    try:
        info = api.inspect_container(container_id)
        config = info.get("Config") or {}
        if request.kind == "attach":
            if not config.get("OpenStdin"):
                raise SessionError(
                    f"job {request.job_id} was not started by grun: use gattach to open a "
                    "shell in it"
                )
            # its output so far too (a quick command's), unless it was attached before
            logs = 0 if request.reopen else 1
            params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1, "logs": logs}
            sock = api.attach_socket(container_id, params=params)
            # the engine accepts an attach to a stopped container and then sends nothing:
            # the process must still run once the attach is in place
            if not api.inspect_container(container_id).get("State", {}).get("Running"):
                _raw(sock).close()
                raise SessionError(f"job {request.job_id}'s process has ended")
            tty = bool(config.get("Tty"))
            return SessionHandle(api, _raw(sock), not tty, container_id, early=_early(sock))
        if request.kind == "forward":
            pid = int(info.get("State", {}).get("Pid") or 0)
            direct = connect_inside(pid, request.port) if pid else None
            if direct is not None:
                return SessionHandle(api, direct, False, container_id, direct=True)
            command: tuple[str, ...] = (FORWARDER, "127.0.0.1", str(request.port))
            tty = False
        else:
            command, tty = request.command or SHELL, request.tty
        exec_id = api.exec_create(
            container_id, list(command), stdin=True, tty=tty, user=config.get("User") or ""
        )["Id"]
        sock = api.exec_start(exec_id, socket=True, tty=tty)
        return SessionHandle(api, _raw(sock), not tty, container_id, exec_id, early=_early(sock))
    except (APIError, DockerException) as exc:
        raise SessionError(engine_message(exc)) from None
    except OSError as exc:  # /proc of a container that just ended
        why = os.strerror(exc.errno or 0)
        raise SessionError(f"job {request.job_id}'s container: {why}") from None
    except ENGINE_DOWN as exc:
        raise SessionError(f"container engine not answering: {exc}") from None


def connect_inside(pid: int, port: int) -> socket.socket | None:
    """A TCP connection to 127.0.0.1:``port`` in the network namespace of process ``pid``,
    made by a thread that enters it (only that thread does; it ends at once). None when this
    agent may not enter it; SessionError when nothing answers on the port there."""
    made: dict[str, Any] = {}

    def enter() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            with open(f"/proc/{pid}/ns/net", "rb") as ns:
                if libc.setns(ns.fileno(), CLONE_NEWNET) != 0:
                    made["denied"] = ctypes.get_errno()
                    return
            made["sock"] = socket.create_connection(("127.0.0.1", port), timeout=10)
        except PermissionError:
            made["denied"] = errno.EPERM
        except OSError as exc:
            made["error"] = exc.strerror or str(exc)

    thread = threading.Thread(target=enter, name="netns-connect", daemon=True)
    thread.start()
    thread.join()
    if "error" in made:
        raise SessionError(f"port {port} in the job's container: {made['error']}")
    sock = made.get("sock")
    if sock is not None:
        sock.settimeout(None)
    return sock


def _raw(sock: Any) -> socket.socket:
    """The socket under docker-py's wrapper (a SocketIO over a Unix socket)."""
    raw = getattr(sock, "_sock", sock)
    raw.settimeout(None)
    return raw  # type: ignore[no-any-return]


def _early(sock: Any) -> bytes:
    """The stream's first bytes that came with the engine's answer head: docker-py read
    them into the answer's buffer, which reading the socket itself would skip (a quick
    process's output, the replay of an attached one's)."""
    reader = getattr(
        getattr(getattr(getattr(sock, "_response", None), "raw", None), "_fp", None), "fp", None
    )
    if reader is None or not hasattr(reader, "peek"):
        return b""
    raw = _raw(sock)
    raw.setblocking(False)  # peek returns the buffer alone, without waiting for more
    try:
        buffered = reader.peek()
        return reader.read(len(buffered)) if buffered else b""
    except OSError:
        return b""
    finally:
        raw.settimeout(None)
