"""The scheduler's business logic (see ``base`` for the threading contract).

``Core`` combines the parts: jobs (submit, list, cancel), agents (hello, heartbeats, events,
lost nodes), GPUs (health, occupancy, idle jobs; extends agents), admin (register, drain,
resume, remove nodes) and planning (snapshot, apply).
"""

from __future__ import annotations

from rota.scheduler.core.admin import AdminCore, Conflict, RemoveResult
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
from rota.scheduler.core.control import ControlCore
from rota.scheduler.core.gpus import GpusCore
from rota.scheduler.core.jobs import JobsCore


class Core(JobsCore, GpusCore, AdminCore, ControlCore):
    """State and transitions of the scheduler. Not thread-safe: one thread calls it."""


__all__ = [
    "LAUNCH_PREFIX",
    "AuthError",
    "CancelResult",
    "Conflict",
    "Core",
    "NotFound",
    "Orders",
    "RemoveResult",
    "SubmitItem",
    "SubmitResult",
    "UserError",
    "hash_token",
]
