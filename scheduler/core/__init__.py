"""The scheduler's business logic (see ``base`` for the threading contract).

``Core`` combines the parts: jobs (submit, list, cancel), agents (hello, heartbeats, events,
lost nodes) and planning (snapshot, apply).
"""

from __future__ import annotations

from rota.scheduler.core.agents import AgentsCore
from rota.scheduler.core.base import (
    LAUNCH_PREFIX,
    AuthError,
    CancelResult,
    NotFound,
    Orders,
    SubmitItem,
    SubmitResult,
    UserError,
    hash_token,
)
from rota.scheduler.core.jobs import JobsCore


class Core(JobsCore, AgentsCore):
    """State and transitions of the scheduler. Not thread-safe: one thread calls it."""


__all__ = [
    "LAUNCH_PREFIX",
    "AuthError",
    "CancelResult",
    "Core",
    "NotFound",
    "Orders",
    "SubmitItem",
    "SubmitResult",
    "UserError",
    "hash_token",
]
