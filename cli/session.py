"""The client's side of an interactive session (grun, gattach, rota forward, rota proxy): a
terminal in raw mode with its size and resizes, or plain pipes, relayed through the scheduler.

``run_session`` opens the session, shows what the job waits for (``on_wait``), then copies
input to the session and its output to ``stdout_fd`` (stderr's to ``stderr_fd``) until the
process ends; it returns the process's exit code. Input waits in a small queue: when the
scheduler reads no more (its window is full), reading input stops too.

When the scheduler goes away (a restart, a lost connection), a session given ``reconnect``
seconds (grun's, whose process runs on in its container) opens again on the same job as soon
as the scheduler answers, for at most that long since it last answered; the terminal stays
as it is and the process goes on where it was. Otherwise, or when the time runs out, or when
a session without a terminal had started (a gap in piped output would go unnoticed), the
session ends with ``LOST`` (255, as ssh's), saying that the job runs on.

An attach to a session's terminal (grun's) counts the terminal's bytes it has shown, and when
it opens again asks for exactly those after them, which the node keeps for a while
(``agent/terminals.py``). There ``~.`` at the start of a line detaches (ssh's escape: the
session runs on; ``grun --attach JOB`` goes back), and so does another client attaching.
"""

from __future__ import annotations

import os
import signal
import sys
import termios
import threading
import time
import tty
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from rota.cli.client import Client
from rota.cli.errors import CliError

CHUNK = 256 * 1024
QUEUED = 64  # input messages waiting for the call
LOST = 255  # the exit code when the scheduler went away and did not come back in time
DETACHED = 0  # the exit code when the client detached (~.) or another client attached
ESCAPE_HELP = "~. detach (the session runs on), ~? this list, ~~ a ~ (at the start of a line)"
RETRY = (0.2, 2.0)  # seconds between tries to reach the scheduler again: first, at most


def terminal_size(fd: int) -> tuple[int, int]:
    """(rows, cols) of the terminal on ``fd``; 24x80 when it is not one."""
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        return 24, 80
    return size.lines, size.columns


def run_session(
    client: Client,
    opening: dict[str, Any],
    use_tty: bool,
    on_wait: Callable[[Any], None] = lambda reply: None,
    on_start: Callable[[], None] = lambda: None,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    stderr_fd: int = 2,
    reconnect: float = 0.0,
    prog: str = "rota",
) -> int:
    """Run one session (see the module doc); CliError when it cannot open or breaks (its
    code ``LOST`` when the scheduler went away)."""
    outbox = _Outbox(QUEUED)
    raw: list[Callable[[], None]] = []
    started = answered = False
    lost_at = 0.0  # when the scheduler last went away; 0 while it answers
    delay = RETRY[0]
    untried = client.target.address.count(",")  # other schedulers to open it on (standbys)
    terminal = use_tty and opening["kind"] == "attach"  # a session's own terminal
    # the terminal's bytes shown (None: it asked for the kept tail and none came yet)
    position: int | None = None if opening.get("replay") == "tail" else 0
    detached = threading.Event()  # ~. was typed
    calls: list[Any] = []  # the current call, cancelled by ~.

    def notice(text: str) -> None:
        _write_all(stderr_fd, f"\r\n{prog}: {text}\r\n" if raw else f"{prog}: {text}\n")

    def detach() -> None:
        detached.set()
        for current in calls:
            current.cancel()

    def left() -> int:
        notice(
            f"detached from job {opening['job_id']} (it runs on; grun --attach "
            f"{opening['job_id']} goes back)"
        )
        return DETACHED

    try:
        while True:
            if use_tty:
                opening = {**opening, "tty": True}
                opening["rows"], opening["cols"] = terminal_size(stdin_fd)
            call = client.interact(outbox.stream(client.interact_request(**opening)))
            calls[:] = [call]
            if detached.is_set():
                return left()
            try:
                for reply in call:
                    answered = True
                    if lost_at:
                        notice(f"the scheduler is back: job {opening['job_id']} goes on")
                        lost_at, delay = 0.0, RETRY[0]
                    if reply.started and not started:
                        started = True
                        on_start()
                        tell_size = None
                        if use_tty:
                            size = _Size(stdin_fd, outbox, client, opening["rows"], opening["cols"])
                            raw += _raw(stdin_fd, size)
                            tell_size = size.tell
                        escape = _Escape(notice, detach) if terminal else None
                        _read_input(stdin_fd, outbox, client, not use_tty, escape, tell_size)
                    elif reply.state and not started:
                        on_wait(reply)
                    if reply.data and reply.stream != 2 and terminal:
                        if position is not None and reply.offset > position:
                            missed = reply.offset - position
                            notice(f"{missed} bytes of output were not kept on the node")
                        position = reply.offset + len(reply.data)
                    if reply.data:
                        _write_all(stderr_fd if reply.stream == 2 else stdout_fd, reply.data)
                    if reply.detached:
                        notice("detached: another client attached")
                        return DETACHED
                    if reply.exited:
                        return int(reply.exit_code)
                    if reply.error:
                        raise CliError(reply.error, 1)
                raise CliError("the session ended without an exit code", 1)
            except client.rpc_error as exc:
                if detached.is_set():
                    return left()
                if not answered and untried and client.lost(exc):  # a standby, or one down
                    untried -= 1
                    client.next_scheduler()
                    continue
                if not client.lost(exc) or not (answered or reconnect):  # never reached
                    raise client.translate(exc) from None
                now = time.monotonic()
                job = opening["job_id"]
                if not reconnect or (started and not use_tty):  # pipes: no gap in the output
                    why = f"lost the scheduler at {client.target.address}; the session is lost"
                    raise CliError(f"{why}; job {job} goes on without it", LOST) from None
                if not lost_at:
                    lost_at = now
                    notice(
                        f"lost the scheduler at {client.target.address}; trying to reach it "
                        f"again for {reconnect:g} s (job {job} runs on)"
                    )
                elif now - lost_at > reconnect:
                    why = f"the scheduler did not answer again within {reconnect:g} s"
                    raise CliError(_lost(client, job, why), LOST) from None
                # attached before: the process's earlier output is not replayed, but what
                # its terminal wrote after what was shown is
                opening["reopen"] = started and opening["kind"] == "attach"
                if opening["reopen"] and terminal and position is not None:
                    opening["replay"], opening["resume_from"] = "from", position
                client.next_scheduler()  # a standby may lead now
                time.sleep(delay)
                delay = min(delay * 2, RETRY[1])
            finally:
                call.cancel()
                outbox.next_call()
    finally:
        for undo in reversed(raw):
            undo()
        outbox.close()


def _lost(client: Client, job: str, why: str) -> str:
    """What grun says when it gives up on the scheduler."""
    return (
        f"lost the scheduler at {client.target.address}: {why}; job {job} runs on until its "
        f"process ends, its time limit, gcancel {job} or idle reclamation (grun --attach "
        f"{job} goes back to its terminal)"
    )


class _Outbox:
    """Requests for the session's current call, at most ``size`` waiting. A call's stream
    ends when the next call begins, so a broken call's sender takes nothing meant for the
    next one."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: deque[Any] = deque()
        self._cond = threading.Condition()
        self._call = 0
        self._closed = False

    def put(self, item: Any, block: bool = True) -> bool:
        """Queue ``item``; False when it was not (closed, or full and not ``block``)."""
        with self._cond:
            while len(self._items) >= self._size and not self._closed:
                if not block:
                    return False
                self._cond.wait()
            if self._closed:
                return False
            self._items.append(item)
            self._cond.notify_all()
            return True

    def stream(self, first: Any) -> Iterator[Any]:
        """The current call's requests: ``first``, then what is put, until the next call."""
        with self._cond:
            call = self._call
        yield first
        while True:
            with self._cond:
                while not self._items and call == self._call and not self._closed:
                    self._cond.wait()
                if call != self._call or self._closed:
                    return
                item = self._items.popleft()
                self._cond.notify_all()
            yield item

    def next_call(self) -> None:
        with self._cond:
            self._call += 1
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class _Size:
    """The terminal size last sent to the session, sent again whenever the terminal's differs:
    on SIGWINCH and before each chunk of keys, so keys typed after a resize reach the session
    after it (the signal's handler runs only when the main thread next gets to it, which a
    busy machine may delay past the input thread's next read)."""

    def __init__(self, fd: int, outbox: _Outbox, client: Client, rows: int, cols: int) -> None:
        self._fd, self._outbox, self._client, self._sent = fd, outbox, client, (rows, cols)

    def tell(self) -> None:
        """Send the size if it changed; when the queue is full, the next call sends it. No
        lock (the signal's handler must not wait on the input thread): two callers at once
        may both send it, and one that sent a size read before a resize sends the new one."""
        while (size := terminal_size(self._fd)) != self._sent:
            request = self._client.interact_request(rows=size[0], cols=size[1])
            if not self._outbox.put(request, block=False):
                return
            self._sent = size


def _raw(fd: int, size: _Size) -> list[Callable[[], None]]:
    """Put the terminal in raw mode (keys such as Ctrl-C go to the session) and send its new
    size on every SIGWINCH; what undoes both."""
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    before = signal.signal(signal.SIGWINCH, lambda signum, frame: size.tell())

    def undo() -> None:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        signal.signal(signal.SIGWINCH, before)

    return [undo]


class _Escape:
    """ssh's escapes, recognised after a newline (or at the start): ``~.`` detaches (calls
    ``detach``), ``~?`` lists them (``say``), ``~~`` sends one ``~``; ``~`` and anything else
    sends both."""

    def __init__(self, say: Callable[[str], None], detach: Callable[[], None]) -> None:
        self._say = say
        self._detach = detach
        self._line_start = True
        self._tilde = False

    def feed(self, data: bytes) -> bytes | None:
        """What of ``data`` goes to the session; None once detached."""
        out = bytearray()
        for byte in data:
            char = bytes((byte,))
            if self._tilde:
                self._tilde = False
                if char == b".":
                    self._detach()
                    return None
                if char == b"?":
                    self._say(ESCAPE_HELP)
                    continue
                if char != b"~":
                    out += b"~"
            elif self._line_start and char == b"~":
                self._tilde = True
                continue
            out += char
            self._line_start = char in (b"\r", b"\n")
        return bytes(out)


def _read_input(
    fd: int,
    outbox: _Outbox,
    client: Client,
    eof: bool,
    escape: _Escape | None = None,
    before_keys: Callable[[], None] | None = None,
) -> None:
    """Copy ``fd`` into the session on a thread (through ``escape``, when given), calling
    ``before_keys`` (if any) before each chunk it sends; at its end, say so when ``eof``."""

    def copy() -> None:
        while True:
            try:
                data = os.read(fd, CHUNK)
            except OSError:
                data = b""
            if not data:
                break
            sent = escape.feed(data) if escape is not None else data
            if sent is None:
                return
            if sent and before_keys:
                before_keys()
            if sent and not outbox.put(client.interact_request(data=sent)):
                return
        if eof:
            outbox.put(client.interact_request(eof=True))

    threading.Thread(target=copy, name="session-input", daemon=True).start()


def _write_all(fd: int, data: bytes | str) -> None:
    view = memoryview(data.encode() if isinstance(data, str) else data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def say(prog: str, text: str) -> None:
    """A status line on stderr (``grun: job 12 ...``), at the start of a line."""
    print(f"{prog}: {text}", file=sys.stderr, flush=True)
