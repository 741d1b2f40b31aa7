"""One srun waiting in a container of this node: its step's output is written to its FIFOs, then
its exit code, by a thread of its own, so that an srun that reads slowly (or died) never holds
up the agent's stream. What it has not read is kept up to ``MAX_BUFFERED`` bytes, then dropped
with a note.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable

from rota.agent.steps.spool import JobSpool, SpoolError

MAX_BUFFERED = 64 << 20  # bytes of output queued for one srun
Key = tuple[int, int]  # (job id, attempt)


class Srun:
    """The FIFOs of one srun request (``out``, ``err``: open write descriptors); ``done`` is
    called once its exit code was handed over (or could not be)."""

    def __init__(
        self,
        key: Key,
        spool: JobSpool,
        name: str,
        out: int,
        err: int,
        done: Callable[[Srun], None],
    ) -> None:
        self.key = key
        self.spool = spool
        self.name = name
        self._fds = (out, err)
        self._done = done
        self._queue: queue.SimpleQueue[tuple[bytes, bool] | int] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._queued = 0
        self._dropped = False
        self._finished = False
        threading.Thread(target=self._drain, daemon=True).start()

    def write(self, data: bytes, stderr: bool = False) -> None:
        """Queue output for srun's stdout (stderr)."""
        with self._lock:
            if self._finished:
                return
            if self._queued + len(data) > MAX_BUFFERED:
                if not self._dropped:
                    self._dropped = True
                    note = b"srun: error: output dropped: srun did not read it fast enough\n"
                    self._queue.put((note, True))
                return
            self._queued += len(data)
        self._queue.put((data, stderr))

    def finish(self, code: int) -> None:
        """After the queued output, close it and hand srun ``code`` (once)."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        self._queue.put(code)

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if isinstance(item, int):
                break
            data, stderr = item
            with self._lock:
                self._queued -= len(data)
            with contextlib.suppress(OSError):  # srun went away: its output is dropped
                _write_all(self._fds[1 if stderr else 0], data)
        for fd in self._fds:
            os.close(fd)
        try:
            end = self.spool.open_fifo(self.name, "end")
        except SpoolError:
            self._done(self)
            return
        with contextlib.suppress(OSError):
            os.write(end, f"{item}\n".encode())
        os.close(end)
        self._done(self)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
