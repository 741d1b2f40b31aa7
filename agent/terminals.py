"""Sessions' terminals kept attached: the agent reads a grun session's terminal (its
container's tty) for as long as its process runs, whether a client is attached or not, and
keeps its last ``keep`` bytes, so a client that comes back (grun after a scheduler restart,
``grun --attach``) gets what it missed.

Positions are the terminal's byte numbers since its container started: the first attach
asks the engine for the output so far (``logs``), which a restarted agent gets again, so a
client's position means the same bytes across agent restarts. At most one client at a time:
a new one takes the terminal over and the one before is told so (``Client.taken_over``).
While a client is attached its window holds the process back, as before; without one the
output only fills the kept bytes, older bytes giving way.
"""

from __future__ import annotations

import dataclasses
import select
import threading
from collections.abc import Callable
from typing import Protocol

from rota.agent.runtime.sessions import SessionHandle
from rota.messages import SessionOpen

CHUNK = 256 * 1024
DEFAULT_KEEP = 64 * 1024  # bytes of each terminal's last output kept (agent setting)
SETTLE = 0.2  # seconds without output that end the engine's replay of the earlier output
SETTLE_MAX = 5.0  # seconds a client asking for the kept tail waits for that replay at most


class Client(Protocol):
    """A client attached to a terminal (``agent/sessions.py``)."""

    def output(self, offset: int, data: bytes) -> bool:
        """Send ``data`` (the terminal's bytes from ``offset``) within the window; False
        when the client went away."""
        ...

    def taken_over(self) -> None:
        """Another client attached: this one ends."""
        ...

    def finish(self, code: int | None) -> None:
        """The process ended with ``code`` (None: the engine cannot say)."""
        ...


class Terminal:
    """One session's terminal: its handle, read by a thread of its own until the process
    ends, its last output and its client."""

    def __init__(self, handle: SessionHandle, keep: int, forget: Callable[[Terminal], None]):
        self.handle = handle
        self._keep = keep
        self._forget = forget
        self._ring = bytearray()
        self._end = 0  # the terminal's bytes so far
        self._lock = threading.Lock()  # the ring, the end, the client and its position
        self._feeding = threading.Lock()  # held while output goes to the client, in order
        self._client: Client | None = None
        self._position = 0  # the client has the bytes before this one
        self._settled = threading.Event()
        self._started = False
        self.ended = False
        self._code: int | None = None

    def _begin(self) -> None:
        """Start reading (once): after the first client joined, so that it gets all the
        output the engine replays."""
        with self._lock:
            started, self._started = self._started, True
        if not started:
            threading.Thread(target=self._read, name="terminal", daemon=True).start()

    def join(self, client: Client, start: int | None) -> None:
        """``client`` becomes the terminal's client, with its output from byte ``start``
        (None: the kept output, once the engine's replay of the earlier output is read);
        the client before it is told it was taken over; -1: the output from now on."""
        if start is None:
            self._begin()
            self._settled.wait(SETTLE_MAX)
        with self._lock:
            before, self._client = self._client, None
        if before is not None:
            before.taken_over()  # also frees the reader, waiting on its window
        with self._feeding:
            with self._lock:
                first = self._end - len(self._ring)
                if start is not None and start < 0:
                    start = self._end
                start = first if start is None else max(start, first)
                backlog = bytes(self._ring[start - first :]) if start < self._end else b""
                # a client that joined since ``before`` was told: this one takes over from it
                late, self._client = self._client, client
                self._position = max(start, self._end)
                ended, code = self.ended, self._code
            if late is not None:
                late.taken_over()
            if backlog:
                client.output(start, backlog)
        self._begin()
        if ended:
            client.finish(code)

    def leave(self, client: Client) -> None:
        """``client`` went away; the terminal runs on."""
        with self._lock:
            if self._client is client:
                self._client = None

    def _read(self) -> None:
        sock = self.handle.sock
        data = self.handle.early
        try:
            while True:
                if not data:
                    if not self._settled.is_set():
                        # poll, not select: the agent's descriptors go past FD_SETSIZE (1024)
                        waiting = select.poll()
                        waiting.register(sock, select.POLLIN)
                        if not waiting.poll(SETTLE * 1000):
                            self._settled.set()
                            continue
                    try:
                        data = sock.recv(CHUNK)
                    except OSError:
                        data = b""
                    if not data:
                        break
                self._take(data)
                data = b""
        finally:
            self._settled.set()
            self._finish()

    def _take(self, data: bytes) -> None:
        with self._lock:
            start = self._end
            self._ring += data
            if len(self._ring) > self._keep:
                del self._ring[: len(self._ring) - self._keep]
            self._end += len(data)
        with self._feeding:
            with self._lock:
                client, skip = self._client, self._position - start
                if client is not None:
                    self._position = max(self._position, self._end)
            if client is not None and skip < len(data):
                skip = max(skip, 0)
                client.output(start + skip, data[skip:])

    def _finish(self) -> None:
        code = self.handle.exit_code()
        with self._lock:
            self.ended, self._code = True, code
            client = self._client
        self._forget(self)
        if client is not None:
            client.finish(code)


class Terminals:
    """The terminals of this agent's sessions, by job attempt. ``open_handle`` opens an
    attach in the engine (may block)."""

    def __init__(
        self, open_handle: Callable[[SessionOpen], SessionHandle], keep: int = DEFAULT_KEEP
    ) -> None:
        self._open_handle = open_handle
        self._keep = keep
        self._terminals: dict[tuple[int, int], Terminal] = {}
        self._lock = threading.Lock()
        self._opening = threading.Lock()  # one attach opened in the engine at a time

    def get(self, request: SessionOpen) -> Terminal | SessionHandle:
        """The terminal of ``request``'s attempt (attached now when it was not), or, when
        its process has no terminal, a handle of its own (pipes: a session as before).
        SessionError when it cannot be attached."""
        key = (request.job_id, request.attempt)
        with self._opening:
            with self._lock:
                found = self._terminals.get(key)
            if found is not None and not found.ended:
                return found
            # the output so far too: positions count from the container's start
            handle = self._open_handle(dataclasses.replace(request, reopen=False))
            if handle.multiplexed:  # pipes: no earlier output after the first attach
                if request.reopen or request.replay:
                    handle.sock.close()
                    return self._open_handle(dataclasses.replace(request, reopen=True))
                return handle
            terminal = Terminal(handle, self._keep, lambda t: self._drop(key, t))
            with self._lock:
                self._terminals[key] = terminal
            return terminal

    def __len__(self) -> int:
        with self._lock:
            return len(self._terminals)

    def _drop(self, key: tuple[int, int], terminal: Terminal) -> None:
        with self._lock:
            if self._terminals.get(key) is terminal:
                del self._terminals[key]
