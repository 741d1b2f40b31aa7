"""Domain forms of what agents say and are told (the api layer converts to/from protobuf)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rota.gpus import GpuInfo, GpuLink
from rota.jobspec import JobSpec


@dataclass(frozen=True, slots=True)
class Inventory:
    """What a node reported in its hello."""

    gpus: tuple[GpuInfo, ...] = ()
    links: tuple[GpuLink, ...] = ()
    driver_version: str = ""
    cuda_version: str = ""
    simulated: bool = False
    note: str = ""
    cpus: float = 0.0
    memory: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)
    gpu_mode: str = ""


@dataclass(frozen=True, slots=True)
class GpuProcess:
    pid: int
    memory_used: int
    job_id: str = ""


@dataclass(frozen=True, slots=True)
class GpuTelemetry:
    index: int
    uuid: str = ""
    utilization: float = 0.0
    memory_used: int = 0
    temperature: float = 0.0
    power: float = 0.0
    error: str = ""
    processes: tuple[GpuProcess, ...] = ()


@dataclass(frozen=True, slots=True)
class RunningAttempt:
    """An attempt an agent holds a container for (running or ended, not yet acknowledged)."""

    job_id: int
    attempt: int
    container_id: str = ""
    running: bool = True


@dataclass(frozen=True, slots=True)
class Hello:
    node_name: str
    token: str
    inventory: Inventory
    attempts: tuple[RunningAttempt, ...] = ()
    address: str = ""
    agent_version: str = ""


@dataclass(frozen=True, slots=True)
class Heartbeat:
    gpus: tuple[GpuTelemetry, ...] = ()
    attempts: tuple[RunningAttempt, ...] = ()
    engine_healthy: bool = True
    engine_error: str = ""


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """What happened to one attempt on the node. ``kind`` is STARTED, EXITED, LAUNCH_FAILED,
    KILLED, TIMED_OUT or LOST."""

    job_id: int
    attempt: int
    kind: str
    exit_code: int = 0
    oom_killed: bool = False
    message: str = ""
    time: float = 0.0
    engine_fault: bool = False


@dataclass(frozen=True, slots=True)
class LaunchOrder:
    job_id: int
    attempt: int
    display_id: str
    spec: JobSpec
    gpu_indices: tuple[int, ...]
    gpu_uuids: tuple[str, ...]
    env: Mapping[str, str]
    time_limit: float
    host_network: bool = False
    user: str = ""
    uid: int | None = None  # None: the node decides from its passwd entry of ``user``
    gid: int | None = None


@dataclass(frozen=True, slots=True)
class KillOrder:
    job_id: int
    attempt: int
    reason: str
    grace: float


@dataclass(frozen=True, slots=True)
class EventAck:
    job_id: int
    attempt: int


@dataclass(frozen=True, slots=True)
class Welcome:
    heartbeat_interval: float
    keep: tuple[RunningAttempt, ...]
    node_grace: float = 0.0


@dataclass(frozen=True, slots=True)
class LogRequest:
    """Ask an agent for an attempt's output (``cancel`` stops a follow)."""

    request_id: int
    job_id: int = 0
    attempt: int = 0
    follow: bool = False
    cancel: bool = False


@dataclass(frozen=True, slots=True)
class LogData:
    """A piece of output an agent sends for a LogRequest; ``eof`` ends it."""

    request_id: int
    data: bytes = b""
    eof: bool = False
    error: str = ""


@dataclass(frozen=True, slots=True)
class Pong:
    """The answer to a heartbeat (the agent's proof that its stream is alive)."""

    time: float


AgentOrder = LaunchOrder | KillOrder | EventAck | Welcome | LogRequest | Pong
