"""The client's side of an interactive session (grun, gattach, rota forward, rota proxy): a
terminal in raw mode with its size and resizes, or plain pipes, relayed through the scheduler.

``run_session`` opens the session, shows what the job waits for (``on_wait``), then copies
input to the session and its output to ``stdout_fd`` (stderr's to ``stderr_fd``) until the
process ends; it returns the process's exit code. Input waits in a small queue: when the
scheduler reads no more (its window is full), reading input stops too.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import termios
import threading
import tty
from collections.abc import Callable, Iterator
from typing import Any

from rota.cli.client import Client
from rota.cli.errors import CliError

CHUNK = 256 * 1024
QUEUED = 64  # input messages waiting for the call


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
) -> int:
    """Run one session (see the module doc); CliError when it cannot open or breaks."""
    requests: queue.Queue[Any] = queue.Queue(QUEUED)
    if use_tty:
        opening = {**opening, "tty": True}
        opening["rows"], opening["cols"] = terminal_size(stdin_fd)
    requests.put(client.interact_request(**opening))

    def outgoing() -> Iterator[Any]:
        while (item := requests.get()) is not None:
            yield item

    call = client.interact(outgoing())
    restore: list[Any] = []
    try:
        with client.errors():
            for reply in call:
                if reply.started:
                    on_start()
                    if use_tty:
                        restore += _raw(stdin_fd, requests, client)
                    _read_input(stdin_fd, requests, client, eof=not use_tty)
                elif reply.state:
                    on_wait(reply)
                if reply.data:
                    _write_all(stderr_fd if reply.stream == 2 else stdout_fd, reply.data)
                if reply.exited:
                    return int(reply.exit_code)
                if reply.error:
                    raise CliError(reply.error, 1)
        raise CliError("the session ended without an exit code", 1)
    finally:
        for undo in reversed(restore):
            undo()
        call.cancel()
        with contextlib.suppress(queue.Full):
            requests.put_nowait(None)


def _raw(fd: int, requests: queue.Queue[Any], client: Client) -> list[Callable[[], None]]:
    """Put the terminal in raw mode (keys such as Ctrl-C go to the session) and send its new
    size on every SIGWINCH; what undoes both."""
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)

    def resized(signum: int, frame: Any) -> None:
        rows, cols = terminal_size(fd)
        with contextlib.suppress(queue.Full):  # the next resize sends the size again
            requests.put_nowait(client.interact_request(rows=rows, cols=cols))

    before = signal.signal(signal.SIGWINCH, resized)

    def undo() -> None:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        signal.signal(signal.SIGWINCH, before)

    return [undo]


def _read_input(fd: int, requests: queue.Queue[Any], client: Client, eof: bool) -> None:
    """Copy ``fd`` into the session on a thread; at its end, say so when ``eof``."""

    def copy() -> None:
        while True:
            try:
                data = os.read(fd, CHUNK)
            except OSError:
                data = b""
            if not data:
                break
            requests.put(client.interact_request(data=data))
        if eof:
            requests.put(client.interact_request(eof=True))

    threading.Thread(target=copy, name="session-input", daemon=True).start()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def say(prog: str, text: str) -> None:
    """A status line on stderr (``grun: job 12 ...``), at the start of a line."""
    print(f"{prog}: {text}", file=sys.stderr, flush=True)
