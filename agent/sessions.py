"""The agent's side of interactive sessions: bytes between a session's socket to the engine
and the scheduler's stream, flow-controlled both ways.

Output: at most ``window`` bytes sent and not yet acknowledged by the scheduler (it
acknowledges what its client took), so a slow client slows the process down instead of
filling anyone's memory. Input: each chunk written is acknowledged (``SessionOutput.ack``), and
the scheduler keeps at most its window of input in flight. Each session has a reader and a
writer thread; nothing here blocks the link's thread. A grun session's terminal is read by its
``Terminal`` instead (``agent/terminals.py``), which outlives its clients and keeps its last
output for the next one.

A forward whose opening carries a dial ticket goes another way: once the port is open, the
agent dials a raw data connection back to the scheduler (``agent/dial.py``) and copies bytes
between the two sockets (``rota.bytepipe``), no message per chunk; when it cannot, it says why
(``dial_error``) and closes the port, and the scheduler opens a session of the usual kind.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import socket
import struct
import threading
from collections.abc import Callable

from rota.agent.dial import Dialer, DialError
from rota.agent.runtime.sessions import SessionError, SessionHandle
from rota.agent.terminals import DEFAULT_KEEP, Terminal, Terminals
from rota.bytepipe import abort, relay
from rota.messages import SessionInput, SessionOpen, SessionOutput

log = logging.getLogger("rota.agent")

CHUNK = 256 * 1024  # bytes of output per message
DEFAULT_WINDOW = 4 << 20


class Sessions:
    """Open sessions by request id. ``open_handle`` opens one in the engine (may block);
    ``send`` queues a message for the scheduler; ``dialer`` makes forwards' data connections
    (None: none is made, every forward is relayed over the stream); ``keep``: bytes of each
    terminal's last output kept."""

    def __init__(
        self,
        open_handle: Callable[[SessionOpen], SessionHandle],
        send: Callable[[SessionOutput], None],
        dialer: Dialer | None = None,
        keep: int = DEFAULT_KEEP,
    ) -> None:
        self._open_handle = open_handle
        self._send = send
        self._dialer = dialer
        self.terminals = Terminals(open_handle, keep)
        self._sessions: dict[int, _Session] = {}
        # raw forwards' sockets, by a number of this agent's (request ids start again at 1
        # with each scheduler process)
        self._raw: dict[int, tuple[socket.socket, socket.socket]] = {}
        self._raw_ids = itertools.count()
        self._lock = threading.Lock()

    def order(self, order: SessionOpen | SessionInput) -> None:
        """Open a session, or hand it input, a resize, an acknowledgement or its close."""
        if isinstance(order, SessionOpen) and order.dial_ticket:
            threading.Thread(target=self._raw_forward, args=(order,), daemon=True).start()
            return
        if isinstance(order, SessionOpen):
            session = _Session(order, self._open, self._send, self._forget)
            with self._lock:
                self._sessions[order.request_id] = session
            threading.Thread(target=session.run, name="session", daemon=True).start()
            return
        with self._lock:
            found = self._sessions.get(order.request_id)
        if found is not None:
            found.take(order)

    def close_all(self) -> None:
        """The scheduler's stream ended: its sessions' clients are gone, and so are its raw
        forwards' (a scheduler that died closed their data connections, and a port that
        neither writes nor closes would otherwise hold its relay for ever)."""
        with self._lock:
            sessions = list(self._sessions.values())
            forwards = list(self._raw.values())
        for session in sessions:
            session.take(SessionInput(session.request.request_id, close=True))
        for ends in forwards:
            abort(*ends)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _raw_forward(self, order: SessionOpen) -> None:
        """Open the port, dial the data connection back and copy bytes until either ends."""
        rid = order.request_id
        try:
            handle = self._open_handle(order)
        except SessionError as exc:
            self._send(SessionOutput(rid, error=str(exc)))
            return
        except Exception:
            log.exception("forward of job %d failed", order.job_id)
            self._send(SessionOutput(rid, error="the session broke on the node"))
            return
        try:
            if not handle.direct:
                raise DialError("this agent may not enter the container's network namespace")
            if self._dialer is None:
                raise DialError("this agent dials no data connections")
            data, rest = self._dialer.connect(order)
        except Exception as exc:  # DialError, or a failure of this agent's own
            handle.sock.close()
            if not isinstance(exc, DialError):
                log.exception("forward of job %d failed", order.job_id)
            log.warning("forward of job %d: no data connection: %s", order.job_id, exc)
            self._send(SessionOutput(rid, dial_error=str(exc) or "the agent failed"))
            return
        log.info("forward of job %d port %d: raw data connection", order.job_id, order.port)
        key = next(self._raw_ids)
        with self._lock:
            self._raw[key] = (handle.sock, data)
        try:
            relay(handle.sock, data, handle.early, rest)
        finally:
            with self._lock:
                self._raw.pop(key, None)

    def _open(self, request: SessionOpen) -> SessionHandle | Terminal:
        if request.kind == "attach":
            return self.terminals.get(request)
        return self._open_handle(request)

    def _forget(self, request_id: int) -> None:
        with self._lock:
            self._sessions.pop(request_id, None)


class _Session:
    def __init__(
        self,
        request: SessionOpen,
        open_handle: Callable[[SessionOpen], SessionHandle | Terminal],
        send: Callable[[SessionOutput], None],
        forget: Callable[[int], None],
    ) -> None:
        self.request = request
        self._open_handle = open_handle
        self._send = send
        self._forget = forget
        self._window = request.window or DEFAULT_WINDOW
        self._unacked = 0
        self._credit = threading.Condition()
        self._closed = False
        self._inputs: queue.Queue[SessionInput] = queue.Queue()
        self._handle: SessionHandle | None = None
        self._terminal: Terminal | None = None
        self._done = threading.Event()  # a terminal's client: ended (closed, taken over ...)

    def take(self, order: SessionInput) -> None:
        if order.ack:
            with self._credit:
                self._unacked -= order.ack
                self._credit.notify_all()
        if order.close:
            with self._credit:
                self._closed = True
                self._credit.notify_all()
            self._done.set()
            handle = self._handle
            # also frees a writer blocked on a process not reading; a terminal runs on
            if handle is not None and self._terminal is None:
                with contextlib.suppress(OSError):
                    handle.sock.shutdown(socket.SHUT_RDWR)
        if order.data or order.eof or order.rows or order.close:
            self._inputs.put(order)

    def run(self) -> None:
        """Open the session, pump its output until it ends, then say how it ended."""
        rid = self.request.request_id
        try:
            try:
                opened = self._open_handle(self.request)
            except SessionError as exc:
                self._send(SessionOutput(rid, error=str(exc)))
                return
            if isinstance(opened, Terminal):
                self._attach(opened)
                return
            handle = self._handle = opened
            if self.request.rows and self.request.cols:
                handle.resize(self.request.rows, self.request.cols)
            threading.Thread(target=self._write, args=(handle,), daemon=True).start()
            self._read(handle)
            if self._closed:
                return  # the client went away: nobody to tell
            code = handle.exit_code()
            if code is None:
                self._send(SessionOutput(rid, error="the engine did not say how it ended"))
            else:
                self._send(SessionOutput(rid, exited=True, exit_code=code))
        except Exception:
            log.exception("interactive session %d of job %d failed", rid, self.request.job_id)
            self._send(SessionOutput(rid, error="the session broke on the node"))
        finally:
            self._forget(rid)
            self._inputs.put(SessionInput(rid, close=True))  # ends the writer

    def _attach(self, terminal: Terminal) -> None:
        """Be ``terminal``'s client until the client goes away, another takes over or the
        process ends."""
        self._terminal = terminal  # first: a close from now on leaves the terminal's socket be
        handle = self._handle = terminal.handle
        if self.request.rows and self.request.cols:
            handle.resize(self.request.rows, self.request.cols)
        threading.Thread(target=self._write, args=(handle,), daemon=True).start()
        request = self.request
        if request.replay == "from":
            start: int | None = request.resume_from
        elif request.replay == "tail":
            start = None
        else:  # an older scheduler's: all the output, or none when attached before
            start = -1 if request.reopen else 0
        terminal.join(self, start)
        self._done.wait()
        terminal.leave(self)

    # a terminal's client (terminals.Client)
    def output(self, offset: int, data: bytes) -> bool:
        return self._output(1, data, offset)

    def taken_over(self) -> None:
        with self._credit:
            closed, self._closed = self._closed, True
            self._credit.notify_all()
        if not closed:
            self._send(SessionOutput(self.request.request_id, detached=True))
        self._done.set()

    def finish(self, code: int | None) -> None:
        with self._credit:
            closed, self._closed = self._closed, True
        if not closed:
            rid = self.request.request_id
            if code is None:
                self._send(SessionOutput(rid, error="the engine did not say how it ended"))
            else:
                self._send(SessionOutput(rid, exited=True, exit_code=code))
        self._done.set()

    def _read(self, handle: SessionHandle) -> None:
        frames = _Frames() if handle.multiplexed else None
        early = handle.early
        while True:
            try:
                data, early = early or handle.sock.recv(CHUNK), b""
            except OSError:
                return
            if not data:
                return
            parts = frames.feed(data) if frames is not None else [(1, data)]
            for stream, payload in parts:
                if not self._output(stream, payload):
                    return

    def _output(self, stream: int, payload: bytes, offset: int = 0) -> bool:
        """Send ``payload`` (a terminal's from byte ``offset``) once the window allows;
        False when the client went away."""
        for start in range(0, len(payload), CHUNK):
            piece = payload[start : start + CHUNK]
            with self._credit:
                while self._unacked + len(piece) > self._window and not self._closed:
                    self._credit.wait(1.0)
                if self._closed:
                    return False
                self._unacked += len(piece)
            out = SessionOutput(
                self.request.request_id, stream=stream, data=piece, offset=offset + start
            )
            self._send(out)
        return True

    def _write(self, handle: SessionHandle) -> None:
        rid = self.request.request_id
        while True:
            order = self._inputs.get()
            try:
                if order.close:
                    if self._terminal is None:  # a terminal outlives its clients
                        handle.sock.shutdown(socket.SHUT_RDWR)
                        handle.sock.close()
                    return
                if order.rows and order.cols:
                    handle.resize(order.rows, order.cols)
                if order.data:
                    handle.sock.sendall(order.data)
                    self._send(SessionOutput(rid, ack=len(order.data)))
                if order.eof and self._terminal is None:  # a terminal's input has no end
                    handle.sock.shutdown(socket.SHUT_WR)
            except OSError:
                if order.close:
                    return


class _Frames:
    """Docker's multiplexed stream: 8-byte headers (stream, size) before each payload."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buf += data
        out = []
        while len(self._buf) >= 8:
            stream, size = struct.unpack(">BxxxL", self._buf[:8])
            if len(self._buf) < 8 + size:
                break
            out.append((2 if stream == 2 else 1, self._buf[8 : 8 + size]))
            self._buf = self._buf[8 + size :]
        return out
