"""The simulated nodes, spread round-robin over worker processes, seen from the orchestrator."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from multiprocessing.connection import Connection
from typing import Any

from bench.loadgen import worker
from bench.loadgen.node import NodeSettings
from bench.loadgen.procfs import cpu_seconds

CONNECTED, LAUNCHED, COMPLETED, DISCONNECTS = range(worker.PROGRESS_SLOTS)


class Fleet:
    """``nodes`` are (name, join token); node i starts ``ramp * i / len(nodes)`` after ``go``."""

    def __init__(
        self,
        nodes: list[tuple[str, str]],
        workers: int,
        ramp: float,
        settings: NodeSettings,
    ) -> None:
        ctx = multiprocessing.get_context("spawn")  # grpc does not survive fork
        self.size = len(nodes)
        count = max(1, min(workers, len(nodes)))
        self._phase = ctx.Value("i", 0, lock=False)
        self._progress = ctx.Array("q", count * worker.PROGRESS_SLOTS, lock=False)
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        for slot in range(count):
            share = [(i, name, token) for i, (name, token) in enumerate(nodes) if i % count == slot]
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(
                target=worker.main,
                args=(slot, share, len(nodes), ramp, settings, self._phase, self._progress, theirs),
                daemon=True,
            )
            proc.start()
            theirs.close()
            self._conns.append(mine)
            self._procs.append(proc)
        self.started = 0.0

    async def go(self) -> None:
        """Wait until every worker has built its nodes, then start the ramp."""
        for conn in self._conns:
            reply = await asyncio.to_thread(conn.recv)
            assert reply == ("ready",), reply
        self.started = time.monotonic() + 0.2
        for conn in self._conns:
            conn.send(("go", self.started))

    def set_phase(self, phase: int) -> None:
        self._phase.value = phase

    def count(self, slot: int) -> int:
        return sum(self._progress[slot :: worker.PROGRESS_SLOTS])

    async def wait_connected(self, timeout: float) -> float | None:
        """Seconds from ``go`` until every node had its welcome; None if not within timeout."""
        deadline = time.monotonic() + timeout
        while self.count(CONNECTED) < self.size:
            if time.monotonic() > deadline:
                return None
            await asyncio.sleep(0.1)
        return time.monotonic() - self.started

    async def stop_idle(self, count: int, mode: str) -> list[str]:
        """Stop ``count`` connected nodes that hold no job (spread over the workers)."""
        names: list[str] = []
        for slot, conn in enumerate(self._conns):
            share = count // len(self._conns) + (slot < count % len(self._conns))
            conn.send(("stop", share, mode))
            reply = await asyncio.to_thread(conn.recv)
            names.extend(reply[1])
        return names

    def cpu_seconds(self) -> float:
        return sum(cpu_seconds(p.pid) for p in self._procs if p.is_alive())

    async def finish(self) -> dict[str, Any]:
        """End every stream and return the workers' statistics, added up."""
        for conn in self._conns:
            conn.send(("finish",))
        results = []
        for conn in self._conns:
            reply = await asyncio.to_thread(conn.recv)
            results.append(reply[1])
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
        return worker.merge(results)
