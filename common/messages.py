"""What agents and the scheduler say to each other, defined once for both (no protobuf).

The agent's link and the scheduler's api convert these to and from ``rota.v1`` messages; nothing
else on either side sees the wire format. Times are Unix seconds from the sender's clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from rota.gpus import GpuInfo, GpuLink
from rota.jobspec import JobSpec


class EventKind(StrEnum):
    """What happened to an attempt on its node (``rota.v1.JobEventKind``, same names)."""

    STARTED = "STARTED"  # the container runs
    EXITED = "EXITED"  # it ended by itself (exit_code, oom_killed)
    LAUNCH_FAILED = "LAUNCH_FAILED"  # the engine refused it (message); no container left
    KILLED = "KILLED"  # stopped on a kill order
    TIMED_OUT = "TIMED_OUT"  # stopped at its time limit
    LOST = "LOST"  # the agent has no container for this attempt (or fenced it)

    @property
    def final(self) -> bool:
        """True when the attempt is over (every kind but STARTED)."""
        return self is not EventKind.STARTED


# ---------------------------------------------------------------- agent -> scheduler


@dataclass(frozen=True, slots=True)
class Inventory:
    """What a node has. The GPU backend fills the GPU facts (``simulated`` marks GPUs that are
    not real, ``note`` says why there are none); the agent adds CPUs, memory, labels and the
    GPU mode before its hello."""

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
    """A compute process on a GPU (host pid); ``job_id`` is the display id of the job whose
    container runs it, when the agent could tell."""

    pid: int
    memory_used: int
    job_id: str = ""


@dataclass(frozen=True, slots=True)
class GpuTelemetry:
    """Live readings of one GPU (host index). Memory in bytes, power in watts, temperature in
    Celsius, utilisation in percent; ``error`` is set when the GPU is lost or failing. None:
    no usable reading (the scheduler's intake turns NaN and infinities into None)."""

    index: int
    uuid: str = ""
    utilization: float | None = 0.0
    memory_used: int = 0
    temperature: float | None = 0.0
    power: float | None = 0.0
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
    """The first message on every (re)connect."""

    node_name: str
    token: str
    inventory: Inventory
    attempts: tuple[RunningAttempt, ...] = ()
    address: str = ""
    agent_version: str = ""
    dials_forwards: bool = False  # it dials forwards' data connections back (SessionOpen)
    log_windows: bool = False  # it keeps LogRequest.window and takes LogRequest.ack


@dataclass(frozen=True, slots=True)
class Heartbeat:
    gpus: tuple[GpuTelemetry, ...] = ()
    attempts: tuple[RunningAttempt, ...] = ()
    engine_healthy: bool = True
    engine_error: str = ""
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """What happened to one attempt on the node."""

    job_id: int
    attempt: int
    kind: EventKind
    exit_code: int = 0
    oom_killed: bool = False
    message: str = ""
    time: float = 0.0
    engine_fault: bool = False  # LAUNCH_FAILED because the engine was down, not the job's fault


@dataclass(frozen=True, slots=True)
class LogData:
    """A piece of output an agent sends for a LogRequest; ``eof`` ends it."""

    request_id: int
    data: bytes = b""
    eof: bool = False
    error: str = ""


@dataclass(frozen=True, slots=True)
class Keepalive:
    """ "Still here" between heartbeats when the telemetry period exceeds the keepalive
    interval."""


@dataclass(frozen=True, slots=True)
class StepLayout:
    """srun's layout options; 0 = unset (the job's layout decides)."""

    nodes: int = 0
    ntasks: int = 0
    ntasks_per_node: int = 0
    gpus_per_task: int = 0
    label: bool = False  # srun -l: each output line starts with its task's rank
    nodelist: str = ""  # srun -w: a host list of the job's nodes the step runs on
    kill_on_bad_exit: bool = False  # srun -K: a node's tasks failing stops the other nodes'
    wait: int = 0  # srun -W N: N seconds after a node's tasks end, the other nodes' are stopped


@dataclass(frozen=True, slots=True)
class StepStart:
    """srun ran in a container of this node: start a step of the job (``request_id`` is the
    agent's own id of that srun). ``environment`` is srun's ``export -p`` text."""

    request_id: int
    job_id: int
    attempt: int
    layout: StepLayout
    argv: tuple[str, ...]
    environment: bytes = b""
    cwd: str = ""


@dataclass(frozen=True, slots=True)
class StepOutput:
    """Output of a step's tasks: from an agent, for the scheduler's StepLaunch ``request_id``;
    from the scheduler, for the asking agent's StepStart ``request_id``. ``ack`` (scheduler ->
    the StepLaunch's node, no data): that many bytes of its output were passed on."""

    request_id: int
    data: bytes
    stderr: bool = False
    ack: int = 0


@dataclass(frozen=True, slots=True)
class StepEnd:
    """A node's tasks of a step ended (agent -> scheduler), or the whole step did (scheduler
    -> the asking agent, with its number and the first failed task). ``exit_code``: the
    highest of the tasks'; ``error``: why it could not run."""

    request_id: int
    exit_code: int = 0
    error: str = ""
    timed_out: bool = False
    step: int = 0
    failed_task: str = ""
    reported: bool = False  # srun -K/-W: srun's lines about the tasks went out as output


# ---------------------------------------------------------------- scheduler -> agent


@dataclass(frozen=True, slots=True)
class LaunchOrder:
    """Run one attempt of a job in a container with exactly these GPUs (host indices and UUIDs).
    ``env`` holds the scheduler's variables (``ROTA_*``, gang settings)."""

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
    steps_only: bool = False  # run no command: the container stays up to host srun steps

    @property
    def container_env(self) -> dict[str, str]:
        """The container's environment: the job file's ``env`` with the scheduler's on top."""
        return {**self.spec.env, **self.env}


@dataclass(frozen=True, slots=True)
class KillOrder:
    """Stop an attempt: SIGTERM, ``grace`` seconds, SIGKILL. With ``warn_signal`` (a name
    such as ``USR1``), that signal first and the stop ``warn_seconds`` later (a preemption's
    warning)."""

    job_id: int
    attempt: int
    reason: str
    grace: float
    warn_signal: str = ""
    warn_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class EventAck:
    """The scheduler recorded the attempt's final event: the agent may remove its container."""

    job_id: int
    attempt: int


@dataclass(frozen=True, slots=True)
class Welcome:
    """The answer to a hello: the attempts the agent keeps running (others are stopped) and
    ``node_grace``, how long the scheduler waits for a silent node (0: forever).

    The agent looks at its GPUs every ``heartbeat_interval``, sends telemetry every
    ``telemetry_period`` (0: every ``heartbeat_interval``) and at once when GPU or engine health
    changes, and sends at least one message every ``keepalive_interval`` (0: no keepalives).
    ``node_timeout``: the silence after which the scheduler marks the node DOWN (0: not said);
    a cut-off agent stops its jobs no sooner (``FENCE_KILL_MARGIN``)."""

    heartbeat_interval: float
    keep: tuple[RunningAttempt, ...] = ()
    node_grace: float = 0.0
    telemetry_period: float = 0.0
    keepalive_interval: float = 0.0
    node_timeout: float = 0.0


# Seconds before ``node_grace`` ends by which an agent cut off from the scheduler has sent
# SIGKILL to its containers (time for the engine to carry it out on a loaded host); the
# scheduler refuses a ``node_grace`` shorter than ``node_timeout`` plus this.
FENCE_KILL_MARGIN = 5.0


# What one message of output counts against a session's or a log request's window at least,
# on the agent's side: an acknowledgement gives back as much for each message it answers, so
# output written a byte at a time holds at most ``window / MESSAGE_COST`` messages in flight,
# not ``window`` of them.
MESSAGE_COST = 1024


def window_cost(size: int) -> int:
    """What a message of ``size`` bytes of output counts against its window."""
    return max(size, MESSAGE_COST)


@dataclass(frozen=True, slots=True)
class LogRequest:
    """Ask an agent for an attempt's output (``cancel`` stops a follow). ``window``: bytes
    the agent may send unacknowledged (0: no limit); ``ack`` (no job): bytes of the request's
    output its reader took."""

    request_id: int
    job_id: int = 0
    attempt: int = 0
    follow: bool = False
    cancel: bool = False
    window: int = 0
    ack: int = 0


@dataclass(frozen=True, slots=True)
class Pong:
    """The answer to a heartbeat or keepalive (the agent's proof that its stream is alive),
    with the current telemetry period (0: unchanged)."""

    time: float
    telemetry_period: float = 0.0


@dataclass(frozen=True, slots=True)
class StepTask:
    """One task of a step on a node: its rank (``SLURM_PROCID``), its rank on the node
    (``SLURM_LOCALID``) and the host indices of the GPUs it owns."""

    rank: int
    local_id: int
    gpu_indices: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class StepLaunch:
    """Run these tasks of step ``step`` in the attempt's container; their output and end carry
    ``request_id``, and at most ``window`` bytes of output go unacknowledged."""

    request_id: int
    job_id: int
    attempt: int
    step: int
    node_id: int
    nnodes: int
    ntasks: int
    tasks: tuple[StepTask, ...]
    argv: tuple[str, ...]
    environment: bytes = b""
    cwd: str = ""
    nodelist: str = ""
    tasks_per_node: str = ""
    label: bool = False
    window: int = 0  # bytes of output sent and not yet acknowledged at most (0: no limit)
    kill_on_bad_exit: bool = False  # srun -K: a task failing stops this node's other tasks
    wait: int = 0  # srun -W N: N seconds after this node's first task ends, kill the others


@dataclass(frozen=True, slots=True)
class StepCancel:
    """From the scheduler: stop the tasks of the StepLaunch ``request_id``; from an agent: the
    srun of StepStart ``request_id`` was interrupted, stop its step. ``kill``: SIGKILL the
    tasks (srun -W ran out), not SIGTERM; ``named``: srun -K/-W stopped them, so the node
    names its stopped tasks in the step's output as srun does."""

    request_id: int
    kill: bool = False
    named: bool = False


# ---------------------------------------------------------------- interactive sessions (grun)


@dataclass(frozen=True, slots=True)
class SessionOutput:
    """What an interactive session's process wrote (``stream`` 1 stdout, 2 stderr), input
    bytes written since the last ``ack``, or its end: ``exited`` with ``exit_code``, or
    ``error`` (it could not open or broke)."""

    request_id: int
    stream: int = 1
    data: bytes = b""
    ack: int = 0
    exited: bool = False
    exit_code: int = 0
    error: str = ""
    dial_error: str = ""  # a forward's data connection could not be dialled back: why
    node_lost: bool = False  # the scheduler's own: the node's stream ended mid-session
    offset: int = 0  # a terminal's output: the terminal's byte number of data[0]
    detached: bool = False  # another client attached to the terminal: this one ends


SESSION_KINDS = ("attach", "exec", "forward")
"""attach: the job's own process (grun); exec: a command in its container (gattach); forward:
a TCP port of its container (rota forward, rota proxy)."""


@dataclass(frozen=True, slots=True)
class SessionOpen:
    """Open an interactive session in an attempt's container (``kind`` of ``SESSION_KINDS``).
    The agent sends at most ``window`` bytes of output not yet acknowledged."""

    request_id: int
    job_id: int
    attempt: int
    kind: str
    command: tuple[str, ...] = ()
    tty: bool = False
    rows: int = 0
    cols: int = 0
    port: int = 0
    window: int = 0
    dial_ticket: str = ""  # forward: dial the data connection back with it (see rota.proto)
    dial_port: int = 0
    dial_tls: bool = False
    reopen: bool = False  # attach again, without replaying the process's earlier output
    # attach to a terminal: "from" (its output after byte resume_from), "tail" (its kept
    # output), "" (as reopen says: all of it, or none)
    replay: str = ""
    resume_from: int = 0


@dataclass(frozen=True, slots=True)
class SessionInput:
    """Input for a session (``data``, ``eof``), a terminal size (rows and cols, 0:
    unchanged), output bytes the client took (``ack``), or ``close``: the client went away."""

    request_id: int
    data: bytes = b""
    eof: bool = False
    rows: int = 0
    cols: int = 0
    ack: int = 0
    close: bool = False


@dataclass(frozen=True, slots=True)
class JobRequeue:
    """``scontrol requeue`` ran in the job's container on this node: requeue the job."""

    job_id: int
    attempt: int


@dataclass(frozen=True, slots=True)
class JobCommand:
    """``sbatch`` or ``scancel`` (``tool``) ran in the job's container on this node: its
    arguments, the script sbatch read (``script_index``: the argument it read it from, -1 for
    none or standard input), the container's working directory and, for sbatch, the values
    of the variables its ``--export`` options name bare (``environment``: (name, value)
    pairs from the environment it ran in). ``sbatch-wait`` asks whether the job ``argv[0]``
    ended (``sbatch --wait``). The scheduler answers with a ``JobCommandReply`` of the same
    ``request_id``."""

    request_id: int
    job_id: int
    attempt: int
    tool: str
    argv: tuple[str, ...] = ()
    script: bytes = b""
    script_index: int = -1
    cwd: str = ""
    environment: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class JobCommandReply:
    """What the command prints (``output`` on its standard output, ``error`` on its
    standard error) and its exit code; ``wait_for``: the job sbatch --wait now waits for
    (the container asks again with ``sbatch-wait``); ``ended``: an ``sbatch-wait`` answer
    that ends the wait (an answer without it, a failure on the way, is asked again)."""

    request_id: int
    exit_code: int
    output: str = ""
    error: str = ""
    wait_for: str = ""
    ended: bool = False


AgentMessage = (
    Hello
    | Heartbeat
    | AgentEvent
    | LogData
    | Keepalive
    | StepStart
    | StepOutput
    | StepEnd
    | StepCancel
    | SessionOutput
    | JobRequeue
    | JobCommand
)
AgentOrder = (
    LaunchOrder
    | KillOrder
    | EventAck
    | Welcome
    | LogRequest
    | Pong
    | StepLaunch
    | StepOutput
    | StepEnd
    | StepCancel
    | SessionOpen
    | SessionInput
    | JobCommandReply
)
