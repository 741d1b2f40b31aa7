"""Outputs of ``rota simulate``: the run's figures (terminal, JSON, summary CSV) and per-job CSV.

The figures of a run are a dict keyed by ``COLUMNS``: what was run (``RUN_FIELDS``), the
summary (``metrics.FIELDS``) and ``wall_seconds``. JSON and the summary CSV carry the same
keys and values; the summary CSV gets one row per run, so several runs make one table.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path

from rota.scheduler.sim.engine import SimResult
from rota.scheduler.sim.metrics import FIELDS

RUN_FIELDS = (
    "trace",
    "policy",
    "config",
    "reservations",
    "nodes",
    "gpus_per_node",
    "seed",
    "limits",
    "checkpointable",
    "restart_cost",
    "default_time_limit",
)
COLUMNS = (*RUN_FIELDS, *FIELDS, "wall_seconds")
JOB_COLUMNS = ("id", "account", "user", "gpus", "submit", "start", "end", "run_time", "timed_out")


def print_figures(figures: Mapping[str, object]) -> None:
    """The policy, the summary and the wall time, one per line."""
    for name in ("policy", *FIELDS, "wall_seconds"):
        value = figures[name]
        print(f"{name:>14}: {value:.4g}" if isinstance(value, float) else f"{name:>14}: {value}")


def write_json(path: str, figures: Mapping[str, object]) -> None:
    """``figures`` as one JSON object (``config``, ``reservations`` null when no file was
    given)."""
    with open(path, "w") as out:
        json.dump(dict(figures), out, indent=2)


def check_summary_csv(path: str) -> None:
    """ValueError unless ``path`` is absent, empty or a summary CSV with ``COLUMNS``."""
    try:
        with open(path, newline="") as handle:
            header = next(csv.reader(handle), None)
    except FileNotFoundError:
        return
    if header is not None and tuple(header) != COLUMNS:
        raise ValueError(
            f"{path} exists and is not a summary CSV (header {header}); "
            "pick another file or remove it (per-job rows go to --jobs-csv)"
        )


def append_summary_csv(path: str, figures: Mapping[str, object]) -> None:
    """Append ``figures`` as one row of ``COLUMNS``, after the header when ``path`` is new or
    empty (``check_summary_csv`` first). A missing ``config`` or ``reservations`` is an empty
    cell."""
    target = Path(path)
    new = not target.exists() or target.stat().st_size == 0
    with open(target, "a", newline="") as out:
        writer = csv.writer(out)
        if new:
            writer.writerow(COLUMNS)
        writer.writerow([figures[name] for name in COLUMNS])


def write_jobs_csv(path: str, result: SimResult) -> None:
    """One row of ``JOB_COLUMNS`` per trace job (``start``/``end`` -1: never placed)."""
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(JOB_COLUMNS)
        for r in result.records:
            j = r.job
            times = [r.start, r.end, r.run_time, int(r.timed_out)]
            writer.writerow([j.id, j.account, j.user, j.gpus, j.submit_time, *times])
