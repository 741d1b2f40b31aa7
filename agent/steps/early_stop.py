"""srun's ``-K/--kill-on-bad-exit`` and ``-W/--wait`` among the tasks of one node, with the
lines SLURM's srun prints for them (SLURM 22.05): a task failing stops the node's other tasks
(SIGTERM), ``-W N`` kills those still running N seconds after the first one ended (SIGKILL).
Between nodes the scheduler stops whole nodes (``rota.scheduler.step_relay``), and each node
names its stopped tasks at the end (``report``)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable

from rota.messages import StepLaunch


def ranks(numbers: list[int]) -> str:
    """SLURM's form of task ranks: ``task 3``, ``tasks 0,2-3``."""
    parts: list[str] = []
    ordered = sorted(set(numbers))
    start = prev = ordered[0] if ordered else 0
    for n in [*ordered[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    word = "task" if len(ordered) == 1 else "tasks"
    return f"{word} {','.join(parts)}"


def task_end(code: int) -> str:
    """How SLURM's srun names a task's end: its exit code, or its signal (strsignal)."""
    if code > 128:
        try:
            return signal.strsignal(signal.Signals(code - 128)) or f"Signal {code - 128}"
        except ValueError:
            pass
    return f"Exited with exit code {code}"


class EarlyStop:
    """Watches the ends of one node's tasks of ``order`` and stops the rest as srun's ``-K``
    and ``-W`` say. ``stop(sig)`` stops the tasks still running; ``say(text)`` sends srun's
    lines to its standard error. Thread-safe."""

    def __init__(
        self,
        order: StepLaunch,
        node: str,
        stop: Callable[[signal.Signals], None],
        say: Callable[[bytes], None],
    ) -> None:
        self.order = order
        self.node = node
        self.stop = stop
        self.say = say
        self._lock = threading.Lock()
        self._ended: dict[int, int] = {}  # rank -> exit code
        self._first_failed = -1  # the rank -K reported at once
        self._timer: threading.Timer | None = None
        self._silent = False  # the tasks were stopped for another reason
        self._named = False  # ... by -K/-W on another node: still name them
        self.fired = False  # the node's tasks were stopped by -K or -W

    @property
    def step(self) -> str:
        return f"{self.order.job_id}.{self.order.step}"

    def ended(self, rank: int, code: int) -> None:
        """Task ``rank`` ended with ``code``."""
        order = self.order
        with self._lock:
            self._ended[rank] = code
            running = [t.rank for t in order.tasks if t.rank not in self._ended]
            if self.fired or self._silent or not running:
                return
            if order.kill_on_bad_exit and code:
                self.fired = True
                self._first_failed = rank
            elif order.wait and self._timer is None:
                self._timer = threading.Timer(order.wait, self._waited)
                self._timer.daemon = True
                self._timer.start()
                return
            else:
                return
        self.say(
            f"srun: error: {self.node}: task {rank}: {task_end(code)}\n".encode()
            + self._terminating()
        )
        self.stop(signal.SIGTERM)

    def _waited(self) -> None:
        with self._lock:
            running = [t.rank for t in self.order.tasks if t.rank not in self._ended]
            if self.fired or self._silent or not running:
                return
            self.fired = True
            exited = list(self._ended)
        self.say(
            (
                f"srun: First task exited {self.order.wait}s ago\n"
                f"srun: StepId={self.step} {ranks(running)}: running\n"
                f"srun: StepId={self.step} {ranks(exited)}: exited\n"
            ).encode()
            + self._terminating()
            + b"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
        )
        self.stop(signal.SIGKILL)

    @property
    def first_failed(self) -> int:
        """The rank whose failure made ``-K`` stop the others; -1: none did."""
        return self._first_failed

    def silence(self, named: bool = False) -> None:
        """The tasks are being stopped for another reason (srun interrupted, the time limit,
        the scheduler; ``named``: -K/-W because of another node's tasks, so ``report`` still
        names them): neither option acts here any more."""
        with self._lock:
            self._silent = True
            self._named = self._named or named
            if self._timer is not None:
                self._timer.cancel()

    def _terminating(self) -> bytes:
        when = time.strftime("%Y-%m-%dT%H:%M:%S")
        return (
            f"srun: launch/slurm: _step_signal: Terminating StepId={self.step}\n"
            f"slurmstepd: error: *** STEP {self.step} ON {self.node} CANCELLED AT {when} ***\n"
        ).encode()

    def report(self, failed: dict[int, str]) -> bytes:
        """Once every task ended, srun's closing lines about the node's ``failed`` tasks (rank
        -> how it ended), grouped by how they ended as SLURM's srun groups them (``srun:
        error: gpu01: tasks 0,2-3: Terminated``): after ``-K`` or ``-W`` acted, those not named
        yet; when the tasks ended on their own or -K/-W stopped them for another node's, every
        one; nothing when they were stopped for another reason (srun interrupted, the time
        limit: srun says so itself)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            if self._silent and not (self.fired or self._named):
                return b""
            groups: dict[str, list[int]] = {}
            for rank, why in sorted(failed.items()):
                if rank != self._first_failed:
                    groups.setdefault(why, []).append(rank)
        lines = [
            f"srun: error: {self.node}: {ranks(rs)}: {why}\n"
            for why, rs in sorted(groups.items(), key=lambda g: min(g[1]))
        ]
        if self._first_failed >= 0:
            lines.append(f"srun: Force Terminated StepId={self.step}\n")
        return "".join(lines).encode()
