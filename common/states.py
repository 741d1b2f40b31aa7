"""Job states, their SLURM codes, and which are terminal (CONVENTIONS.md)."""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    """The life cycle of a job; the value is the long name users see in JSON."""

    PENDING = "PENDING"
    CONFIGURING = "CONFIGURING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    PREEMPTED = "PREEMPTED"

    @property
    def code(self) -> str:
        """The SLURM short code shown in tables (PD, R, CD ...)."""
        return STATE_CODES[self]

    @property
    def terminal(self) -> bool:
        """True once the job will never run again."""
        return self in TERMINAL_STATES

    @property
    def active(self) -> bool:
        """True while the job holds (or is about to hold) resources on a node."""
        return self in ACTIVE_STATES


STATE_CODES: dict[JobState, str] = {
    JobState.PENDING: "PD",
    JobState.CONFIGURING: "CF",
    JobState.RUNNING: "R",
    JobState.COMPLETING: "CG",
    JobState.COMPLETED: "CD",
    JobState.FAILED: "F",
    JobState.CANCELLED: "CA",
    JobState.TIMEOUT: "TO",
    JobState.NODE_FAIL: "NF",
    JobState.OUT_OF_MEMORY: "OOM",
    JobState.PREEMPTED: "PR",
}

TERMINAL_STATES = frozenset(
    {
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.CANCELLED,
        JobState.TIMEOUT,
        JobState.NODE_FAIL,
        JobState.OUT_OF_MEMORY,
        JobState.PREEMPTED,
    }
)
ACTIVE_STATES = frozenset({JobState.CONFIGURING, JobState.RUNNING, JobState.COMPLETING})


def parse_state(text: str) -> JobState:
    """Accept a long name or a SLURM code, any case; raise ValueError otherwise."""
    upper = text.strip().upper()
    for state, code in STATE_CODES.items():
        if upper in (state.value, code):
            return state
    allowed = ", ".join(f"{s.value}/{c}" for s, c in STATE_CODES.items())
    raise ValueError(f"unknown state {text!r}; allowed: {allowed}")
