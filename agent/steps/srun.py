"""One srun waiting in a container of this node: its step's output is written to its FIFOs, then
its exit code, by a thread of its own, so that an srun that reads slowly (or died) never holds
up the agent's stream. What the sruns of one attempt have not read is kept up to
``MAX_BUFFERED`` bytes in all (their ``OutputBudget``), then dropped with a note: a job's 64
sruns that never read hold no more of the agent's memory than one.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable

from rota.agent.steps.spool import JobSpool, SpoolError

MAX_BUFFERED = 64 << 20  # bytes of output queued for the sruns of one attempt, in all
Key = tuple[int, int]  # (job id, attempt)


class OutputBudget:
    """The bytes of output the sruns of one attempt may have queued at once. Thread-safe."""

    def __init__(self, limit: int = MAX_BUFFERED) -> None:
        self.limit = limit
        self._used = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        """Reserve ``size`` bytes; False (nothing reserved) when they do not fit."""
        with self._lock:
            if self._used + size > self.limit:
                return False
            self._used += size
            return True

    def give(self, size: int) -> None:
        with self._lock:
            self._used -= size


class Srun:
    """The FIFOs of one srun request (``out``, ``err``: open write descriptors), or of the
    ``tool`` that made it (sbatch, scancel); ``done`` is called once its exit code was handed
    over (or could not be); its queued output counts against ``budget``, its attempt's."""

    def __init__(
        self,
        key: Key,
        spool: JobSpool,
        name: str,
        out: int,
        err: int,
        done: Callable[[Srun], None],
        budget: OutputBudget,
        tool: str = "srun",
    ) -> None:
        self.key = key
        self.tool = tool
        self.spool = spool
        self.name = name
        self._fds = (out, err)
        self._done = done
        self._budget = budget
        # (output, for stderr, bytes of the budget it holds), then the exit code's line
        self._queue: queue.SimpleQueue[tuple[bytes, bool, int] | str] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._dropped = False
        self._finished = False
        threading.Thread(target=self._drain, daemon=True).start()

    def write(self, data: bytes, stderr: bool = False) -> None:
        """Queue output for srun's stdout (stderr)."""
        with self._lock:
            if self._finished:
                return
            if not self._budget.take(len(data)):
                if not self._dropped:
                    self._dropped = True
                    note = b"srun: error: output dropped: srun did not read it fast enough\n"
                    self._queue.put((note, True, 0))
                return
        self._queue.put((data, stderr, len(data)))

    def finish(self, code: int, note: str = "") -> None:
        """After the queued output, close it and hand srun ``code`` (once), followed on its
        line by ``note`` (one line of words, for the tool)."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        self._queue.put(f"{code} {note}".strip() if note else str(code))

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if isinstance(item, str):
                break
            data, stderr, held = item
            with contextlib.suppress(OSError):  # srun went away: its output is dropped
                _write_all(self._fds[1 if stderr else 0], data)
            self._budget.give(held)
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
