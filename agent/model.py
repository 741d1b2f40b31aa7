"""The agent's domain: what the scheduler orders and what the agent reports (no protobuf)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rota.agent.gpu.base import Inventory
from rota.jobspec import Mount


@dataclass(frozen=True, slots=True)
class Launch:
    """Run one attempt of a job in a container with exactly these GPUs."""

    job_id: int
    attempt: int
    display_id: str
    image: str
    command: tuple[str, ...]
    env: Mapping[str, str]
    gpu_indices: tuple[int, ...] = ()
    gpu_uuids: tuple[str, ...] = ()
    time_limit: float = 0.0
    cpus: float = 0.0
    memory: int = 0
    shm_size: int = 0
    mounts: tuple[Mount, ...] = ()
    workdir: str = ""
    pull: str = "missing"
    host_network: bool = False
    user: str = ""  # the job's user
    uid: int | None = None  # from the scheduler; None: the node's passwd entry of ``user``
    gid: int | None = None


@dataclass(frozen=True, slots=True)
class Kill:
    job_id: int
    attempt: int
    reason: str
    grace: float


@dataclass(frozen=True, slots=True)
class LogRequest:
    request_id: int
    job_id: int = 0
    attempt: int = 0
    follow: bool = False
    cancel: bool = False


@dataclass(frozen=True, slots=True)
class AttemptRef:
    job_id: int
    attempt: int
    container_id: str = ""
    running: bool = True


@dataclass(frozen=True, slots=True)
class Report:
    """What happened to an attempt. ``kind``: STARTED EXITED LAUNCH_FAILED KILLED TIMED_OUT LOST."""

    job_id: int
    attempt: int
    kind: str
    exit_code: int = 0
    oom_killed: bool = False
    message: str = ""
    time: float = 0.0
    engine_fault: bool = False

    @property
    def final(self) -> bool:
        return self.kind != "STARTED"


@dataclass(frozen=True, slots=True)
class EngineHealth:
    healthy: bool
    error: str = ""


@dataclass(frozen=True, slots=True)
class Welcome:
    heartbeat_interval: float
    keep: tuple[AttemptRef, ...] = field(default_factory=tuple)
    node_grace: float = 0.0


@dataclass(frozen=True, slots=True)
class Ack:
    job_id: int
    attempt: int


@dataclass(frozen=True, slots=True)
class HelloInfo:
    """What the agent says when it (re)connects."""

    node: str
    token: str
    address: str
    inventory: Inventory
    attempts: tuple[AttemptRef, ...]
    cpus: float
    memory: int
    labels: Mapping[str, str]
    gpu_mode: str


Order = Launch | Kill | LogRequest | Welcome | Ack
