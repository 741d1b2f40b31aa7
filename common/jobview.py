"""The one job object of ``gqueue --json``, ``gsub --wait`` and the web API (docs/web.md).

Either side first copies what it knows of a job into ``JobFacts`` (no decisions there); every
rule of what is shown lives in ``job_json``:

- ``exit_code``: the exit status once the job has ended (a terminal state) and a container
  reported one; null while it is pending, running or completing (a gang member that already
  exited, or the previous attempt of a requeued job, is not the job's result) and for an end
  without one (cancelled before it started, a lost node).
- ``reservation``: the name of the reservation the job asked for, null when none (as every
  unset key of the object is null, not "").
- ``reason``: the scheduler's reason; while the job is active and has none, its latest
  warning (what ``gqueue`` shows as ``WARN:``); ``warning`` carries the warning as well.
- ``gpu_type``, ``qos``, ``dependency``, ``workdir``, ``constraint`` (node features): null
  when the job gives none; ``cpus`` and ``memory`` (bytes) per node, 0 when unlimited;
  ``job_id`` the integer id of the row (an array task has its own).
- ``partition``: the partition the job runs (or ran) in once placed, else the partitions it
  may run in (``a`` or ``a,b``); null for a job from before partitions.
- ``interactive``: true for a session started by ``grun`` (docs/interactive.md).
- Times are ISO 8601 UTC, null when unset; ``time_limit`` whole seconds.

Light on purpose: the CLI imports it at start-up (no scheduler or generated code).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rota.states import JobState


@dataclass(frozen=True)
class JobFacts:
    """A job as either side knows it. Times are Unix seconds, 0 when unset."""

    id: str
    name: str
    user: str
    account: str
    state: JobState
    reason: str
    warning: str
    held: str
    exit_code: int | None
    attempt: int
    nodes: Sequence[str]
    gpus: int  # per node
    gpu_ids: Mapping[str, Sequence[int]]
    submit_time: float
    start_time: float
    end_time: float
    time_limit: float
    requested_nodes: int  # the spec's ``nodes`` (0 = not given)
    estimated_start: float
    reservation: str
    job_id: int  # the row's integer id (one per array task)
    cpus: float  # per node, 0 = no limit
    memory: int  # bytes per node, 0 = no limit
    gpu_type: str
    node_selector: Mapping[str, str]
    qos: str
    dependency: str
    workdir: str  # "" = the image's
    command: Sequence[str]
    partition: str = ""  # where it was placed; "" while pending
    partitions: str = ""  # the partitions it may run in, "a,b"
    interactive: bool = False  # a grun session
    constraint: str = ""  # node features, SLURM's -C expression


def iso(ts: float | None) -> str | None:
    """ISO 8601 UTC (``2026-11-23T17:05:00Z``), or None for an unset time (0 or None)."""
    if not ts:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def shown_reason(state: JobState, reason: str, warning: str) -> str:
    """The reason a job is listed with: the scheduler's, else (while active) its warning."""
    return reason or (warning if state.active else "")


def job_json(job: JobFacts) -> dict[str, Any]:
    """The documented job object (see the module's docstring for what each key means)."""
    ended = job.state.terminal
    return {
        "id": job.id,
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "state": job.state.value,
        "state_code": job.state.code,
        "reason": shown_reason(job.state, job.reason, job.warning),
        "exit_code": job.exit_code if ended else None,
        "attempt": job.attempt,
        "nodes": list(job.nodes),
        "gpus": job.gpus,
        "gpu_ids": {node: list(ids) for node, ids in job.gpu_ids.items()},
        "submit_time": iso(job.submit_time),
        "start_time": iso(job.start_time),
        "end_time": iso(job.end_time),
        "time_limit": int(job.time_limit),
        "num_nodes": max(len(job.nodes), job.requested_nodes or 1),
        "estimated_start": iso(job.estimated_start),
        "expected_end": iso(job.start_time + job.time_limit)
        if job.start_time and job.time_limit and not ended
        else None,
        "reservation": job.reservation or None,
        "partition": _partition(job),
        "held": job.held,
        "warning": job.warning,
        "job_id": job.job_id,
        "cpus": job.cpus,
        "memory": job.memory,
        "gpu_type": job.gpu_type or None,
        "node_selector": dict(job.node_selector),
        "qos": job.qos or None,
        "dependency": job.dependency or None,
        "workdir": job.workdir or None,
        "command": list(job.command),
        "interactive": job.interactive,
        "constraint": job.constraint or None,
    }


def _partition(job: JobFacts) -> str | None:
    placed = job.partition if job.state is not JobState.PENDING else ""
    return placed or job.partitions or None


def facts_from_message(job: Any, state: JobState) -> JobFacts:
    """The facts of a ``rota.v1.Job`` message (``state``: its state, which the caller decodes,
    since this module does not import generated code)."""
    return JobFacts(
        id=job.id,
        name=job.name,
        user=job.user,
        account=job.account,
        state=state,
        reason=job.reason,
        warning=job.warning,
        held=job.held,
        exit_code=job.exit_code if job.has_exit_code else None,
        attempt=job.attempt,
        nodes=list(job.nodes),
        gpus=job.gpus,
        gpu_ids={node: list(ids.indices) for node, ids in job.gpu_ids.items()},
        submit_time=job.submit_time,
        start_time=job.start_time,
        end_time=job.end_time,
        time_limit=job.time_limit,
        requested_nodes=job.spec.nodes,
        estimated_start=job.estimated_start,
        reservation=job.spec.reservation,
        job_id=job.job_id,
        cpus=job.spec.resources.cpus,
        memory=job.spec.resources.memory,
        gpu_type=job.spec.resources.gpu_type,
        node_selector=dict(job.spec.node_selector),
        qos=job.spec.qos,
        dependency=job.spec.dependency,
        workdir=job.spec.workdir,
        command=list(job.spec.command),
        partition=job.partition,
        partitions=job.spec.partition,
        interactive=job.spec.interactive,
        constraint=job.spec.constraint,
    )
