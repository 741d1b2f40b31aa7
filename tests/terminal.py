"""A command driven through a pseudo-terminal (python ``pty``), as a user at a terminal
drives it: keys in, screen text out, the window size changed under it."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time


class Terminal:
    """``argv`` (a Python module's command line) run on a new pseudo-terminal."""

    def __init__(self, argv: list[str], env: dict[str, str], rows: int = 24, cols: int = 80):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the terminal is its stdin, stdout and stderr
            os.execve(sys.executable, [sys.executable, *argv], env)
        self.resize(rows, cols)
        self.seen = b""

    def resize(self, rows: int, cols: int) -> None:
        """Set the window size (the kernel sends SIGWINCH to the terminal's foreground)."""
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def send(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def expect(self, text: bytes, timeout: float = 60.0) -> bytes:
        """Read until ``text`` shows up after what earlier calls consumed; what came before
        it. Fails (naming what was seen) when it does not within ``timeout``."""
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} not seen within {timeout}s; saw {self.seen!r}")
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # the child ended and closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{text!r} not seen before the end; saw {self.seen!r}")
                self.seen += chunk
        before, _, self.seen = self.seen.partition(text)
        return before

    def wait(self, timeout: float = 60.0) -> int:
        """The command's exit code (read what it still writes meanwhile)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                with contextlib.suppress(OSError):
                    self.seen += os.read(self.fd, 65536)
        raise AssertionError(f"the command did not end within {timeout}s; saw {self.seen!r}")

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)
