"""Plain-text tables and JSON objects for the CLI (SLURM-like layouts)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from rota.units import format_duration


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    right: Sequence[str] = (),
    paint: Callable[[str, str], str] | None = None,
) -> str:
    """Columns padded to their widest cell; names in ``right`` are right-aligned. ``paint(header,
    padded cell)`` may decorate body cells (colour) after the widths are fixed."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str], decorate: Callable[[str, str], str] | None) -> str:
        parts = [
            v.rjust(w) if h in right else v.ljust(w)
            for v, w, h in zip(values, widths, headers, strict=True)
        ]
        if decorate is not None:
            parts = [decorate(h, p) for h, p in zip(headers, parts, strict=True)]
        return " ".join(parts).rstrip()

    return "\n".join([line(list(headers), None), *(line(r, paint) for r in cells)])


def iso(ts: float) -> str | None:
    """ISO 8601 UTC, or None for an unset time (0)."""
    if not ts:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def elapsed(start: float, end: float, now: float | None = None) -> str:
    if not start:
        return "0:00"
    return format_duration((end or (now or time.time())) - start)


def job_json(job: Any, state_name: str) -> dict[str, Any]:
    """The documented ``gqueue --json`` object of one job (CONVENTIONS.md)."""
    return {
        "id": job.id,
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "state": state_name,
        "state_code": job.state_code,
        "reason": job.reason,
        "exit_code": job.exit_code if job.has_exit_code else None,
        "attempt": job.attempt,
        "nodes": list(job.nodes),
        "gpus": job.gpus,
        "gpu_ids": {node: list(ids.indices) for node, ids in job.gpu_ids.items()},
        "submit_time": iso(job.submit_time),
        "start_time": iso(job.start_time),
        "end_time": iso(job.end_time),
        "time_limit": int(job.time_limit),
        "num_nodes": max(len(job.nodes), job.spec.nodes or 1),
        "estimated_start": iso(job.estimated_start),
        "reservation": job.spec.reservation or None,
    }
