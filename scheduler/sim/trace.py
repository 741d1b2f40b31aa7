"""Trace jobs and the two CSV formats the simulator reads.

**Philly** (``timestamp,duration,num_gpus,gpu_time,cluster``): ``timestamp`` is the submission
(``YYYY-MM-DD HH:MM:SS``, UTC), ``duration`` run seconds, ``cluster`` is read as the account
and the user (the trace names no users).

**Generic** (``submit_time,duration,gpus,user,account[,time_limit][,reservation]``): times in
seconds (any origin), ``gpus`` in total; an empty or missing ``time_limit`` means "none given";
``reservation`` names a booking of ``--reservations`` the job runs in (empty: none).

Jobs wider than a node become gangs of ``ceil(gpus / gpus_per_node)`` nodes with an equal
share per node. Time limits missing from the trace are derived by ``derive_limits``;
``with_limits`` replays the trace with no limits, its own or noisy ones, and
``mark_checkpointable`` marks a seeded share of the jobs checkpointable.
"""

from __future__ import annotations

import csv
import math
import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

HOUR = 3600.0

NO_LIMIT_SHARE = 0.15  # users who give no time limit (they get the default)
UNDERESTIMATE_SHARE = 0.05  # users whose limit is too short: the job hits TIMEOUT
OVERESTIMATE_MAX = 5.0  # the rest ask for duration x U[1, 5], rounded up to the hour
LIMITS = ("file", "none", "noisy")  # ``with_limits`` modes


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace. ``time_limit`` None: the user gave none (the default applies)."""

    id: int
    submit_time: float
    duration: float
    gpus: int
    user: str
    account: str
    time_limit: float | None = None
    reservation: str = ""
    checkpointable: bool = False


class TraceError(ValueError):
    """A trace file that cannot be read; the message names the file, line and problem."""


def read_trace(path: str | Path, limit_jobs: int | None = None) -> list[TraceJob]:
    """Jobs of a Philly or generic CSV (told apart by the header), in submission order.

    ``limit_jobs`` keeps only the first N jobs by submission time.
    """
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        header = set(reader.fieldnames or ())
        if {"timestamp", "duration", "num_gpus", "cluster"} <= header:
            parse = _philly
        elif {"submit_time", "duration", "gpus", "user", "account"} <= header:
            parse = _generic
        else:
            raise TraceError(f"{path}: unknown header {sorted(header)}")
        jobs = []
        for line, row in enumerate(reader, start=2):
            try:
                jobs.append(parse(row))
            except (KeyError, ValueError) as exc:
                raise TraceError(f"{path}:{line}: {exc}") from None
    jobs.sort(key=lambda j: j.submit_time)
    if limit_jobs is not None:
        jobs = jobs[:limit_jobs]
    origin = jobs[0].submit_time if jobs else 0.0
    return [replace(j, id=i + 1, submit_time=j.submit_time - origin) for i, j in enumerate(jobs)]


def _philly(row: dict[str, str]) -> TraceJob:
    when = datetime.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    account = row["cluster"]
    return TraceJob(
        0, when.timestamp(), float(row["duration"]), int(row["num_gpus"]), account, account
    )


def _generic(row: dict[str, str]) -> TraceJob:
    limit = (row.get("time_limit") or "").strip()
    return TraceJob(
        0,
        float(row["submit_time"]),
        float(row["duration"]),
        int(row["gpus"]),
        row["user"],
        row["account"],
        float(limit) if limit else None,
        (row.get("reservation") or "").strip(),
    )


def derive_limits(jobs: list[TraceJob], seed: int) -> list[TraceJob]:
    """Give jobs without a limit an honest user estimate (seeded; the same for every policy).

    15 % give none (the scheduler's default applies), 5 % underestimate (duration x U[0.3, 0.9]
    rounded up to the minute: they are killed at the limit), the rest overestimate (duration
    x U[1, 5] rounded up to the hour). Jobs that carry a limit keep it.
    """
    rng = random.Random(seed)
    out = []
    for job in jobs:
        draw, factor = rng.random(), rng.random()
        if job.time_limit is not None:
            out.append(job)
            continue
        if draw < NO_LIMIT_SHARE:
            limit = None
        elif draw < NO_LIMIT_SHARE + UNDERESTIMATE_SHARE:
            limit = 60.0 * math.ceil(job.duration * (0.3 + 0.6 * factor) / 60.0)
        else:
            estimate = job.duration * (1.0 + (OVERESTIMATE_MAX - 1.0) * factor)
            limit = HOUR * max(1, math.ceil(estimate / HOUR))
        out.append(replace(job, time_limit=limit))
    return out


def with_limits(jobs: list[TraceJob], mode: str, seed: int) -> list[TraceJob]:
    """The jobs with time limits as ``mode`` says (seeded; the same for every policy).

    ``file``: the trace's own, derived where it gives none (``derive_limits``); ``none``: no
    job gives one (the default applies); ``noisy``: every job asks for its duration x U[1, 5]
    rounded up to the hour, as users who overestimate do. ValueError for another mode.
    """
    if mode == "file":
        return derive_limits(jobs, seed)
    if mode == "none":
        return [replace(job, time_limit=None) for job in jobs]
    if mode == "noisy":
        rng = random.Random(seed)
        out = []
        for job in jobs:
            estimate = job.duration * (1.0 + (OVERESTIMATE_MAX - 1.0) * rng.random())
            out.append(replace(job, time_limit=HOUR * max(1, math.ceil(estimate / HOUR))))
        return out
    raise ValueError(f"unknown limits mode {mode!r}; known: {', '.join(LIMITS)}")


def mark_checkpointable(jobs: list[TraceJob], share: float, seed: int) -> list[TraceJob]:
    """The jobs with a seeded ``share`` in [0, 1] of them checkpointable (1: all, 0: none)."""
    if share >= 1.0 or share <= 0.0:
        return [replace(job, checkpointable=share >= 1.0) for job in jobs]
    rng = random.Random(seed + 1)
    return [replace(job, checkpointable=rng.random() < share) for job in jobs]
