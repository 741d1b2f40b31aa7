"""The JSON objects of the API (docs/web.md), built from the domain objects the engine hands
out. Times are ISO 8601 UTC (null when unset), sizes bytes, durations seconds; a job object has
the keys of ``gqueue --json`` and a few more."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from rota import jobview
from rota.efficiency import efficiency_flags
from rota.jobview import JobFacts, iso
from rota.scheduler.cluster.accounting import FinishedJob, UsageTotal
from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeState
from rota.scheduler.cluster.reservation import Reservation
from rota.scheduler.cluster.status import NodeStatus, free_gpus
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.nodes import NodeSummary
from rota.scheduler.core.reservation_usage import Usage

Json = dict[str, Any]


def encode(data: Any) -> bytes:
    """``data`` as JSON that every parser reads: a NaN or infinite float (which ``json.dumps``
    would write as bare ``NaN``/``Infinity``, refused by browsers' ``JSON.parse``) is null."""
    return json.dumps(_finite(data), allow_nan=False).encode()


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def job_json(job: JobRecord) -> Json:
    """A job as ``gqueue --json`` shows it: the same object, built by ``rota.jobview``."""
    return jobview.job_json(
        JobFacts(
            id=job.display_id,
            name=job.name,
            user=job.user,
            account=job.account,
            state=job.state,
            reason=job.reason,
            warning=job.warning,
            held=job.held,
            exit_code=job.exit_code,
            attempt=job.attempt,
            nodes=job.node_names,
            gpus=job.spec.gpus,
            gpu_ids={a.node: a.gpus for a in job.allocation},
            submit_time=job.submit_time,
            start_time=job.start_time or 0.0,
            end_time=job.end_time or 0.0,
            time_limit=job.time_limit,
            requested_nodes=job.spec.nodes,
            estimated_start=job.estimated_start or 0.0,
            reservation=job.spec.reservation,
            job_id=job.id,
            cpus=job.spec.cpus,
            memory=job.spec.memory,
            gpu_type=job.spec.gpu_type,
            node_selector=job.spec.node_selector,
            qos=job.spec.qos,
            dependency=job.spec.dependency,
            workdir=job.spec.workdir,
            command=job.spec.command,
            partition=job.partition,
            partitions=job.spec.partition,
            interactive=job.spec.interactive,
            constraint=job.spec.constraint,
        )
    )


def event_json(event: JobEvent) -> Json:
    return {
        "time": iso(event.time),
        "attempt": event.attempt,
        "kind": event.kind.value,
        "old_state": event.old_state,
        "new_state": event.new_state,
        "reason": event.reason,
    }


def node_json(
    node: NodeState,
    status: NodeStatus,
    users: Mapping[str, str],
    reserved: int,
    maint: Collection[int] = (),
    partitions: Sequence[str] = (),
    booked: Mapping[int, str] | None = None,
) -> Json:
    """A node with GPU counts and one object per GPU (the heat map's cells). ``users`` maps
    the display id of each job holding a GPU to its user; ``reserved``: GPUs of open
    reservation windows on it; ``maint``: its GPUs under an open MAINT window;
    ``partitions``: those it belongs to; ``booked``: GPU index -> the reservation whose window
    is open on it now. ``gpus_free`` is ``ginfo``'s count (``free_gpus``): none on a
    draining, drained or DOWN node."""
    gpus = [_gpu_json(node, status, g.index, users) for g in node.inventory.gpus]
    for gpu in gpus:
        gpu["reserved"] = (booked or {}).get(gpu["index"], "")
        gpu["unavailable"] = _unavailable(status.state, gpu, gpu["index"] in maint)
    return {
        "name": node.name,
        "state": status.state,
        "reason": status.reason,
        "stale": status.stale,
        "labels": {**node.inventory.labels, **node.labels},  # the agent's, the admin's over them
        "address": node.address,
        "last_heartbeat": iso(node.last_heartbeat),
        "cpus": node.inventory.cpus,
        "memory": node.inventory.memory,
        "simulated": node.inventory.simulated,
        "gpus_total": len(gpus),
        "gpus_free": free_gpus(node, status, maint),
        "gpus_allocated": sum(1 for g in gpus if g["state"] == "allocated"),
        "gpus_unhealthy": sum(1 for g in gpus if g["state"] == "unhealthy"),
        "gpus_reserved": reserved,
        "partitions": list(partitions),
        "gpus": gpus,
    }


def _unavailable(node_state: str, gpu: Json, maint: bool) -> str:
    """Why no one but an admin may book or get this GPU now ("" when it is in service): its
    node draining, drained or down, the GPU unhealthy or drained, or under MAINT."""
    if node_state in ("DRAINING", "DRAINED", "DOWN"):
        return f"node {node_state}"
    if gpu["state"] == "unhealthy":
        return "unhealthy" + (f": {gpu['reason']}" if gpu["reason"] else "")
    if maint:
        return "MAINT"
    return ""


def booked_now(
    reservations: Sequence[tuple[Reservation, Sequence[str]]], now: float
) -> dict[str, dict[int, str]]:
    """Node -> GPU index -> the name of the reservation whose window is open on it at
    ``now``."""
    out: dict[str, dict[int, str]] = {}
    for r, _running in reservations:
        if r.windows(now, now + 1e-3):
            for node, indices in r.gpus.items():
                for index in indices:
                    out.setdefault(node, {})[index] = r.name
    return out


READING_STEPS = {"utilization": 5.0, "memory_used": 2.0**30, "temperature": 5.0, "power": 25.0}


def node_signature(node: Json) -> Json:
    """What of a node the change feed compares: ``node_json`` without its heartbeat time,
    each GPU's readings rounded to ``READING_STEPS`` (5 %, 1 GiB, 5 °C, 25 W), so a node is
    sent again when what a page draws of it changes, not at every heartbeat."""
    gpus = [
        {k: _step(v, READING_STEPS[k]) if k in READING_STEPS else v for k, v in gpu.items()}
        for gpu in node["gpus"]
    ]
    return {k: v for k, v in node.items() if k != "last_heartbeat"} | {"gpus": gpus}


def _step(value: Any, step: float) -> Any:
    return round(value / step) if isinstance(value, int | float) and math.isfinite(value) else None


def _gpu_json(node: NodeState, status: NodeStatus, index: int, users: Mapping[str, str]) -> Json:
    info = next(g for g in node.inventory.gpus if g.index == index)
    shown = status.gpus.get(index)
    reading = next((t for t in node.telemetry if t.index == index), None)
    job = status.holders.get(index, "")
    return {
        "index": index,
        "uuid": info.uuid,
        "model": info.name,
        "memory_total": info.memory_total,
        "state": shown.state if shown is not None else "idle",
        "reason": shown.reason if shown is not None else "",
        "job": job,
        "user": users.get(job, ""),
        "stale": status.stale or reading is None,
        "utilization": reading.utilization if reading is not None else None,
        "memory_used": reading.memory_used if reading is not None else None,
        "temperature": reading.temperature if reading is not None else None,
        "power": reading.power if reading is not None else None,
        "error": reading.error if reading is not None else "",
        "foreign_processes": [
            {"pid": p.pid, "memory_used": p.memory_used}
            for p in (reading.processes if reading is not None else ())
            if not p.job_id
        ],
    }


def summary_json(summary: NodeSummary) -> Json:
    """The counts over every node that ``ginfo -s`` prints (``gpus_free``: the nodes'
    ``gpus_free`` summed)."""
    return {
        "nodes": summary.nodes,
        "states": dict(summary.states),
        "gpus_total": summary.gpus_total,
        "gpus_free": summary.gpus_free,
        "gpus_unhealthy": summary.gpus_unhealthy,
    }


def finished_json(row: FinishedJob, idle_below: float) -> Json:
    """One line of ``gacct``, with the ``--efficiency`` flags of the job."""
    job, usage = row.job, row.usage
    utilization = usage.mean_utilization if usage.samples else None
    return {
        "id": job.display_id,
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "state": job.state.value,
        "exit_code": job.exit_code,
        "start_time": iso(job.start_time),
        "end_time": iso(job.end_time),
        "elapsed": row.elapsed,
        "gpus": row.gpus,
        "gpu_hours": row.gpu_hours,
        "nodes": job.node_names,
        "gpu_utilization": utilization,
        "gpu_memory_peak": usage.memory_peak,
        "gpu_memory_total": usage.memory_total,
        "flags": efficiency_flags(
            utilization, usage.memory_peak, usage.memory_total, idle_below, job.reason
        ),
    }


def total_json(total: UsageTotal) -> Json:
    return {
        "name": total.name,
        "jobs": total.jobs,
        "gpu_hours": total.gpu_hours,
        "gpu_utilization": total.mean_utilization if total.samples else None,
        "booked_unused": total.booked_unused,
    }


def usage_json(usage: Usage) -> Json:
    """How a booking's current window was spent so far, in GPU-hours (``greserve show``)."""
    return {
        "booked": usage.booked / 3600,
        "used": usage.owners / 3600,
        "lent": usage.lent / 3600,
        "idle": usage.idle / 3600,
        "released": usage.released / 3600,
    }


def reservation_json(
    r: Reservation,
    running: Sequence[str],
    windows: Sequence[tuple[float, float]],
    who: Principal,
) -> Json:
    """A booking as ``greserve list --json`` shows it, with its ``windows`` in the period
    asked about (a DAILY or WEEKLY one has several), whether it is the viewer's (``mine``:
    they made it or may use it) and whether they may cancel it."""
    return {
        "name": r.name,
        "start": iso(r.start),
        "end": iso(r.end),
        "windows": [[iso(s), iso(e)] for s, e in windows],
        "gpus": {node: list(idx) for node, idx in sorted(r.gpus.items())},
        "users": list(r.users),
        "accounts": list(r.accounts),
        "flags": list(r.flags),
        "lend": r.lend,
        "unused": r.unused,
        "given_back": iso(r.given_back),
        "created_by": r.created_by,
        "running_jobs": list(running),
        "mine": r.created_by == who.user or who.user in r.users,
        "may_delete": who.admin or r.created_by == who.user,
    }
