"""squeue's ``--format`` letters over the documented ``gqueue --json`` job objects (pure).

Values are spelled as squeue spells them: times ``YYYY-MM-DDTHH:MM:SS`` in local time, durations
``[D-]H:MM:SS`` or ``UNLIMITED``, memory ``4G``/``500M``, ``N/A`` or ``(null)`` where squeue
prints those. ``%P`` is the job's ``partition``: where it runs once placed, else the list it may
run in (``a,b``), ``default`` for a job from before partitions.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

from rota.units import format_duration

Job = dict[str, Any]
PARTITION = "default"  # what %P prints for a job from before partitions


def _seconds(iso: str | None) -> float:
    return datetime.fromisoformat(iso).timestamp() if iso else 0.0


def when(iso: str | None) -> str:
    """squeue's time: local ``2024-01-31T13:05:00``, or ``N/A`` when unset."""
    if not iso:
        return "N/A"
    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%dT%H:%M:%S")


def used(job: Job, now: float) -> str:
    """Run time so far (or in all, once ended), SLURM style."""
    start = _seconds(job["start_time"])
    if not start:
        return "0:00"
    return format_duration((_seconds(job["end_time"]) or now) - start)


def time_left(job: Job, now: float) -> str:
    """``%L``: the limit less the run time so far; ``UNLIMITED`` without a limit."""
    if not job["time_limit"]:
        return "UNLIMITED"
    start = _seconds(job["start_time"])
    ran = ((_seconds(job["end_time"]) or now) - start) if start else 0.0
    return format_duration(max(0.0, job["time_limit"] - ran))


def where(job: Job) -> str:
    """squeue's NODELIST(REASON): nodes once placed, else the pending reason in brackets."""
    if job["state"] == "PENDING":
        return f"({job['reason'] or 'None'})"
    text = ",".join(job["nodes"])
    if job["reason"] and job["state"] in ("CONFIGURING", "RUNNING"):
        text += f" (WARN: {job['reason']})"  # the latest warning: GPU idle or unhealthy
    elif job["reason"] and job["state"] == "COMPLETING":
        text += f" ({job['reason']})"
    return text


def limit(job: Job) -> str:
    return format_duration(job["time_limit"]) if job["time_limit"] else "UNLIMITED"


def memory(num_bytes: int) -> str:
    """squeue's ``%m``: mebibytes with ``M``, or ``G``/``T`` when whole; ``0`` for none."""
    mib = num_bytes // 2**20
    for unit, size in (("T", 2**20), ("G", 2**10)):
        if mib and mib % size == 0:
            return f"{mib // size}{unit}"
    return f"{mib}M" if mib else "0"


def cpus(job: Job, per_node: bool) -> str:
    if not job.get("cpus"):
        return "N/A"
    total = job["cpus"] * (1 if per_node else job["num_nodes"])
    return f"{total:g}"


def gres(job: Job) -> str:
    """``%b`` as squeue 23 prints it: ``gres/gpu:2`` or ``gres/gpu:a100:2``; ``N/A``."""
    if not job["gpus"]:
        return "N/A"
    kind = f"{job['gpu_type'].lower()}:" if job.get("gpu_type") else ""
    return f"gres/gpu:{kind}{job['gpus']}"


def _array(job: Job) -> tuple[str, str]:
    array, sep, task = job["id"].partition("_")
    return (array, task) if sep else (job["id"], "N/A")


def end(job: Job) -> str:
    if job["end_time"] or job.get("expected_end"):
        return when(job["end_time"] or job["expected_end"])
    return "Unknown" if job["start_time"] else "N/A"


def priority(job: Job, long: bool) -> str:
    """``%Q``: the multifactor priority as a whole number; ``%p``: that over 2^32-1 as squeue
    prints it (``%16.14f``); ``N/A`` for a job that is not pending (rota keeps no priority
    once a job starts)."""
    value = job.get("priority")
    if value is None:
        return "N/A"
    whole = max(0, round(value))
    return str(whole) if long else f"{whole / 0xFFFFFFFF:16.14f}"


def features(job: Job) -> str:
    """``%f``: the job's ``constraint`` and its ``node_selector`` labels, joined by ``&``."""
    labels = [f"{k}={v}" for k, v in sorted((job.get("node_selector") or {}).items())]
    constraint = job.get("constraint") or ""
    if constraint and labels:
        constraint = f"({constraint})" if "|" in constraint else constraint
    return "&".join([*labels, constraint] if constraint else labels) or "(null)"


def _null(value: object) -> str:
    return str(value) if value else "(null)"


class Letter(NamedTuple):  # not a dataclass: gqueue starts without importing dataclasses
    header: str
    value: Callable[[Job, float], object]


LETTERS: dict[str, Letter] = {
    "i": Letter("JOBID", lambda j, _: j["id"]),
    "A": Letter("JOBID", lambda j, _: j.get("job_id") or j["id"]),
    "F": Letter("ARRAY_JOB_ID", lambda j, _: _array(j)[0]),
    "K": Letter("ARRAY_TASK_ID", lambda j, _: _array(j)[1]),
    "j": Letter("NAME", lambda j, _: j["name"]),
    "u": Letter("USER", lambda j, _: j["user"]),
    "a": Letter("ACCOUNT", lambda j, _: j["account"]),
    "P": Letter("PARTITION", lambda j, _: j.get("partition") or PARTITION),
    "p": Letter("PRIORITY", lambda j, _: priority(j, long=False)),
    "Q": Letter("PRIORITY", lambda j, _: priority(j, long=True)),
    "q": Letter("QOS", lambda j, _: j.get("qos") or "normal"),
    "t": Letter("ST", lambda j, _: j["state_code"]),
    "T": Letter("STATE", lambda j, _: j["state"]),
    "M": Letter("TIME", used),
    "l": Letter("TIME_LIMIT", lambda j, _: limit(j)),
    "L": Letter("TIME_LEFT", time_left),
    "D": Letter("NODES", lambda j, _: j["num_nodes"]),
    "c": Letter("MIN_CPUS", lambda j, _: cpus(j, per_node=True)),
    "C": Letter("CPUS", lambda j, _: cpus(j, per_node=False)),
    "m": Letter("MIN_MEMORY", lambda j, _: memory(j.get("memory") or 0)),
    "b": Letter("TRES_PER_NODE", lambda j, _: gres(j)),
    "f": Letter("FEATURES", lambda j, _: features(j)),
    "E": Letter("DEPENDENCY", lambda j, _: _null(j.get("dependency"))),
    "R": Letter("NODELIST(REASON)", lambda j, _: where(j)),
    "N": Letter("NODELIST", lambda j, _: ",".join(j["nodes"])),
    "r": Letter("REASON", lambda j, _: j["reason"] or "None"),
    "V": Letter("SUBMIT_TIME", lambda j, _: when(j["submit_time"])),
    "S": Letter("START_TIME", lambda j, _: when(j["start_time"] or j["estimated_start"])),
    "e": Letter("END_TIME", lambda j, _: end(j)),
    "v": Letter("RESERVATION", lambda j, _: _null(j.get("reservation"))),
    "Z": Letter("WORK_DIR", lambda j, _: j.get("workdir") or "N/A"),
    "o": Letter("COMMAND", lambda j, _: " ".join(j.get("command") or ()) or "N/A"),
}
GPUS = Letter("GPUS", lambda j, _: j["gpus"])  # the default table's GPU count (not a letter)
