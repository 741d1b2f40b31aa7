"""Plain-text tables and JSON objects for the CLI (SLURM-like layouts)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rota.states import JobState
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


def elapsed(start: float, end: float, now: float | None = None) -> str:
    if not start:
        return "0:00"
    return format_duration((end or (now or time.time())) - start)


def job_json(job: Any, state: JobState) -> dict[str, Any]:
    """The documented ``gqueue --json`` object (``rota.jobview``) of a ``rota.v1.Job``."""
    from rota import jobview  # only for jobs from gRPC: gqueue's HTTP way gets the objects

    return jobview.job_json(jobview.facts_from_message(job, state))
