"""One state machine per job attempt, and the table of the attempts an agent holds.

An attempt moves LAUNCHING -> RUNNING -> ENDED -> ACKED (LAUNCHING -> ENDED when it could not
start); ENDED carries the final report, kept until the scheduler acknowledges it. Each
``Attempt``'s fields change only through its methods, under its own lock; a transition its phase
does not allow raises ``TransitionError`` and changes nothing. ``AttemptTable`` holds the
attempts by (job id, attempt) under the table's lock (taken before an attempt's, never after).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable

from rota.messages import AgentEvent, EventKind, RunningAttempt

STOP_KINDS = (EventKind.KILLED, EventKind.TIMED_OUT, EventKind.LOST)


class Phase(enum.Enum):
    LAUNCHING = "launching"  # no container running or ended yet
    RUNNING = "running"
    ENDED = "ended"  # final report made, not yet acknowledged
    ACKED = "acked"  # the scheduler recorded the final report; the attempt is forgotten


class TransitionError(RuntimeError):
    """A change the attempt's phase does not allow (a bug in the caller)."""


class Attempt:
    """One job attempt on this node. ``gpus``: host indices it holds while not ended."""

    def __init__(
        self, job_id: int, attempt: int, display_id: str = "", gpus: tuple[int, ...] = ()
    ) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self.display_id = display_id
        self.gpus = gpus
        self.signal = ""  # the job's warning signal, "NAME@SECONDS" ("" none)
        self._lock = threading.Lock()
        self._phase = Phase.LAUNCHING
        self._container_id = ""
        self._deadline = 0.0
        self._final: AgentEvent | None = None
        self._stop_kind: EventKind | None = None
        self._stop_reason = ""

    @property
    def key(self) -> tuple[int, int]:
        return (self.job_id, self.attempt)

    @property
    def phase(self) -> Phase:
        with self._lock:
            return self._phase

    @property
    def container_id(self) -> str:
        with self._lock:
            return self._container_id

    @property
    def deadline(self) -> float:
        """Unix seconds when the time limit ends it; 0: none."""
        with self._lock:
            return self._deadline

    @property
    def final(self) -> AgentEvent | None:
        with self._lock:
            return self._final

    @property
    def stop_kind(self) -> EventKind | None:
        """KILLED, TIMED_OUT or LOST once the agent decided to stop it."""
        with self._lock:
            return self._stop_kind

    @property
    def stop_reason(self) -> str:
        """Reported as the message of the final report."""
        with self._lock:
            return self._stop_reason

    def view(self) -> RunningAttempt:
        with self._lock:
            return RunningAttempt(
                self.job_id, self.attempt, self._container_id, self._phase is Phase.RUNNING
            )

    def created(self, container_id: str) -> None:
        """Its container exists (not started yet). Only while LAUNCHING."""
        with self._lock:
            self._require(Phase.LAUNCHING, "get a container")
            self._container_id = container_id

    def started(self, deadline: float) -> None:
        """LAUNCHING -> RUNNING; ``deadline``: Unix seconds, 0 for no time limit."""
        with self._lock:
            self._require(Phase.LAUNCHING, "start")
            if not self._container_id:
                raise TransitionError(f"{self._name()} cannot start without a container")
            self._phase = Phase.RUNNING
            self._deadline = deadline

    def stop(self, kind: EventKind, reason: str = "") -> bool:
        """Mark it to be stopped as ``kind``; False (nothing changes) when it was already
        marked or has ended."""
        if kind not in STOP_KINDS:
            raise TransitionError(f"{kind.value} is not a way to stop an attempt")
        with self._lock:
            if self._stop_kind is not None or self._phase in (Phase.ENDED, Phase.ACKED):
                return False
            self._stop_kind, self._stop_reason = kind, reason
            return True

    def end(self, report: AgentEvent) -> None:
        """LAUNCHING or RUNNING -> ENDED with its final report."""
        with self._lock:
            self._require((Phase.LAUNCHING, Phase.RUNNING), "end")
            self._phase = Phase.ENDED
            self._final = report

    def acked(self) -> None:
        """ENDED -> ACKED."""
        with self._lock:
            self._require(Phase.ENDED, "be acknowledged")
            self._phase = Phase.ACKED

    def _require(self, allowed: Phase | tuple[Phase, ...], what: str) -> None:
        phases = allowed if isinstance(allowed, tuple) else (allowed,)
        if self._phase not in phases:
            raise TransitionError(f"{self._name()} cannot {what} while {self._phase.value}")

    def _name(self) -> str:
        return f"job {self.job_id} attempt {self.attempt}"


class AttemptTable:
    """The attempts an agent holds: launching, running, or ended and not yet acknowledged."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: dict[tuple[int, int], Attempt] = {}

    def claim(self, att: Attempt) -> Attempt | None:
        """Add ``att`` unless its key is held; the attempt already held, else None."""
        with self._lock:
            existing = self._attempts.get(att.key)
            if existing is None:
                self._attempts[att.key] = att
            return existing

    def get(self, job_id: int, attempt: int) -> Attempt | None:
        with self._lock:
            return self._attempts.get((job_id, attempt))

    def drop(self, att: Attempt) -> None:
        """Forget an attempt that never started (the scheduler sends its launch again)."""
        with self._lock:
            if self._attempts.get(att.key) is att:
                del self._attempts[att.key]

    def ack(self, job_id: int, attempt: int) -> Attempt | None:
        """ENDED -> ACKED and forgotten; the attempt, or None when it has no final report."""
        with self._lock:
            att = self._attempts.get((job_id, attempt))
            if att is None or att.phase is not Phase.ENDED:
                return None
            att.acked()
            del self._attempts[att.key]
            return att

    def in_phase(self, *phases: Phase) -> list[Attempt]:
        with self._lock:
            return [a for a in self._attempts.values() if a.phase in phases]

    def phase(self, job_id: int, attempt: int) -> Phase | None:
        """The attempt's phase; None when it is not held."""
        found = self.get(job_id, attempt)
        return None if found is None else found.phase

    def views(self) -> list[RunningAttempt]:
        """Every attempt held, as the wire model's ``RunningAttempt``."""
        with self._lock:
            return [a.view() for a in self._attempts.values()]

    def gpu_jobs(self) -> dict[int, str]:
        """Host GPU index -> display id of the attempt holding it (launching or running)."""
        return {
            gpu: a.display_id or str(a.job_id)
            for a in self.in_phase(Phase.LAUNCHING, Phase.RUNNING)
            for gpu in a.gpus
        }

    def finals(self) -> list[AgentEvent]:
        """Final reports not yet acknowledged."""
        return [f for a in self.in_phase(Phase.ENDED) if (f := a.final) is not None]

    def strays(self, keep: Iterable[tuple[int, int]]) -> list[Attempt]:
        """Running attempts whose key is not in ``keep``."""
        kept = set(keep)
        return [a for a in self.in_phase(Phase.RUNNING) if a.key not in kept]
