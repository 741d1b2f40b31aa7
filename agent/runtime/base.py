"""The one interface through which the agent runs job attempts in containers.

``DockerRuntime`` implements it over the Docker engine; tests use a fake
(``tests/support/fake_runtime.py``). A runtime is built with the agent's ``report`` callback
(``ReportFn``), which receives every event it makes: STARTED, then one final report per attempt
(EXITED, KILLED, TIMED_OUT, LOST or LAUNCH_FAILED), kept and listed by ``finals`` until ``ack``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rota.agent.runtime.sessions import SessionHandle
from rota.messages import AgentEvent, KillOrder, LaunchOrder, RunningAttempt, SessionOpen

ReportFn = Callable[[AgentEvent], None]


@dataclass(frozen=True, slots=True)
class EngineHealth:
    """Whether the container engine answered its last ping, and why not."""

    healthy: bool
    error: str = ""


class ContainerRuntime(Protocol):
    """Runs and watches this node's job attempts. Every method is safe from any thread and
    returns promptly; work that waits on the engine happens on the runtime's own threads."""

    gpu_mode: str  # "nvidia" or "env": how containers get their GPUs (sent in the hello)

    def adopt(self) -> None:
        """Take over this node's attempts left by an earlier agent process."""

    def launch(self, order: LaunchOrder) -> None:
        """Start the attempt (a second order for it starts nothing; a held final is sent
        again)."""

    def kill(self, order: KillOrder) -> None:
        """Stop the attempt; reported KILLED (LOST when this node does not hold it)."""

    def fence(self, reason: str, grace: float) -> None:
        """Stop every attempt not ended (SIGTERM, ``grace`` seconds, SIGKILL), each reported
        LOST with ``reason``; one still launching is stopped at once when it starts."""

    def fence_kill(self) -> int:
        """SIGKILL every container still running; how many were."""

    def keep_only(self, keep: set[tuple[int, int]]) -> None:
        """Stop the running attempts whose (job id, attempt) is not in ``keep``."""

    def ack(self, job_id: int, attempt: int) -> None:
        """The scheduler recorded the attempt's final report: forget it (output stays)."""

    def attempts(self) -> list[RunningAttempt]:
        """Attempts held: launching, running, or ended with a report not yet acknowledged."""

    def finals(self) -> list[AgentEvent]:
        """Final reports not yet acknowledged (sent again after a reconnect)."""

    def gpu_jobs(self) -> dict[int, str]:
        """Host GPU index -> display id of the attempt holding it (launching or running)."""

    def is_pending(self, job_id: int, attempt: int) -> bool:
        """True while the attempt is being launched."""

    def is_running(self, job_id: int, attempt: int) -> bool: ...

    def log_path(self, job_id: int, attempt: int) -> Path:
        """The file the attempt's output is kept in (live while it runs, complete after)."""

    def container_info(self, container_id: str) -> tuple[int, str] | None:
        """(host pid of the container's init process, job display id); None when gone."""

    def open_session(self, request: SessionOpen) -> SessionHandle:
        """Open an interactive session in the running attempt's container (may wait on the
        engine); ``sessions.SessionError`` saying why not."""

    def health(self) -> EngineHealth:
        """Whether the engine answers now (a short timeout)."""

    def close(self) -> None: ...
