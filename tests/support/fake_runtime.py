"""A ``ContainerRuntime`` without containers, for in-process agent tests.

Attempts live in the real ``AttemptTable`` and move through the real ``Attempt`` state machine;
nothing runs: ``launch`` reports STARTED at once, the test ends an attempt with ``exit``, and a
kill, fence or stray attempt ends at once as KILLED or LOST. Every event goes to ``report``
and is kept in ``events``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rota.agent.runtime.attempts import Attempt, AttemptTable, Phase
from rota.agent.runtime.base import EngineHealth, ReportFn
from rota.agent.runtime.sessions import SessionError, SessionHandle
from rota.messages import (
    AgentEvent,
    EventKind,
    KillOrder,
    LaunchOrder,
    RunningAttempt,
    SessionOpen,
)


class FakeRuntime:
    """``output``: bytes an attempt's log holds once it ends (written under ``log_dir``)."""

    gpu_mode = "env"

    def __init__(
        self, report: ReportFn, clock: Callable[[], float], log_dir: Path, output: bytes = b""
    ) -> None:
        self._report = report
        self._clock = clock
        self._log_dir = log_dir
        self._output = output
        self._table = AttemptTable()
        self.events: list[AgentEvent] = []
        self.launches: list[LaunchOrder] = []
        self.engine = EngineHealth(True)

    # ------------------------------------------------------------ driven by the test

    def exit(self, job_id: int, attempt: int, code: int = 0) -> None:
        """The attempt's container ends with ``code``."""
        att = self._table.get(job_id, attempt)
        assert att is not None, f"job {job_id} attempt {attempt} is not held"
        self._end(att, att.stop_kind or EventKind.EXITED, code, att.stop_reason)

    # ------------------------------------------------------------ ContainerRuntime

    def adopt(self) -> None:
        pass

    def launch(self, order: LaunchOrder) -> None:
        att = Attempt(order.job_id, order.attempt, order.display_id, order.gpu_indices)
        existing = self._table.claim(att)
        if existing is not None:
            if (final := existing.final) is not None:
                self._send(final)
            return
        self.launches.append(order)
        att.created(f"fake-{order.job_id}-{order.attempt}")
        now = self._clock()
        att.started(now + order.time_limit if order.time_limit else 0.0)
        self._send(AgentEvent(order.job_id, order.attempt, EventKind.STARTED, time=now))

    def kill(self, order: KillOrder) -> None:
        att = self._table.get(order.job_id, order.attempt)
        if att is None:
            message = "no container for this attempt"
            self._send(AgentEvent(order.job_id, order.attempt, EventKind.LOST, message=message))
            return
        if (final := att.final) is not None:
            self._send(final)
            return
        att.stop(EventKind.KILLED)
        self._end(att, att.stop_kind or EventKind.KILLED, 137, att.stop_reason)

    def fence(self, reason: str, grace: float) -> None:
        for att in self._table.in_phase(Phase.RUNNING):
            if att.stop(EventKind.LOST, f"fenced: {reason}"):
                self._end(att, EventKind.LOST, 137, att.stop_reason)

    def fence_kill(self) -> int:
        return 0  # fence ended every attempt at once

    def keep_only(self, keep: set[tuple[int, int]]) -> None:
        for att in self._table.strays(keep):
            self.kill(KillOrder(att.job_id, att.attempt, "not kept by the scheduler", 0.0))

    def ack(self, job_id: int, attempt: int) -> None:
        self._table.ack(job_id, attempt)

    def attempts(self) -> list[RunningAttempt]:
        return self._table.views()

    def finals(self) -> list[AgentEvent]:
        return self._table.finals()

    def gpu_jobs(self) -> dict[int, str]:
        return self._table.gpu_jobs()

    def is_pending(self, job_id: int, attempt: int) -> bool:
        return self._table.phase(job_id, attempt) is Phase.LAUNCHING

    def is_running(self, job_id: int, attempt: int) -> bool:
        return self._table.phase(job_id, attempt) is Phase.RUNNING

    def log_path(self, job_id: int, attempt: int) -> Path:
        return self._log_dir / str(job_id) / f"{attempt}.log"

    def container_info(self, container_id: str) -> tuple[int, str] | None:
        return None

    def open_session(self, request: SessionOpen) -> SessionHandle:
        raise SessionError("the fake runtime has no containers to open sessions in")

    def health(self) -> EngineHealth:
        return self.engine

    def close(self) -> None:
        pass

    # ------------------------------------------------------------ internals

    def _end(self, att: Attempt, kind: EventKind, code: int, message: str) -> None:
        path = self.log_path(att.job_id, att.attempt)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self._output)
        report = AgentEvent(
            att.job_id, att.attempt, kind, exit_code=code, message=message, time=self._clock()
        )
        att.end(report)
        self._send(report)

    def _send(self, event: AgentEvent) -> None:
        self.events.append(event)
        self._report(event)
