"""``gsub --wait``: follow submitted jobs to their end and give their exit code.

Jobs are the documented ``gqueue --json`` objects. On a terminal the status is one line
rewritten in place; otherwise a plain line is printed each time the status changes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from rota.states import JobState
from rota.units import format_duration

POLL_SECONDS = 1.0


def ended(jobs: Sequence[dict[str, Any]]) -> bool:
    """True once every job (every task of an array) is in a terminal state."""
    return bool(jobs) and all(JobState(j["state"]).terminal for j in jobs)


def exit_code(jobs: Sequence[dict[str, Any]]) -> int:
    """The highest exit code of the jobs (sbatch --wait's rule for arrays); a job that ended
    without one (cancelled before it started, node failure) counts as 1 unless COMPLETED."""
    codes = [
        j["exit_code"] if j["exit_code"] is not None else (0 if j["state"] == "COMPLETED" else 1)
        for j in jobs
    ]
    return max(codes, default=1)


def status_line(jobs: Sequence[dict[str, Any]]) -> str:
    """``job 12: RUNNING on n1 (0:42)``, or per-state counts for several jobs."""
    if len(jobs) == 1:
        j = jobs[0]
        text = f"job {j['id']}: {j['state']}"
        if j["nodes"] and not JobState(j["state"]).terminal:
            text += f" on {','.join(j['nodes'])}"
        if j["state"] == "PENDING" and j["reason"]:
            text += f" ({j['reason']})"
        if j["exit_code"] is not None:
            text += f", exit code {j['exit_code']}"
        return text
    counts = Counter(j["state_code"] for j in jobs)
    ids = sorted({j["id"].split("_", 1)[0] for j in jobs}, key=int)
    summary = ", ".join(f"{n} {code}" for code, n in sorted(counts.items()))
    return f"job {','.join(ids)} ({len(jobs)} tasks): {summary}"


def follow(
    fetch: Callable[[], list[dict[str, Any]]],
    out: TextIO,
    interval: float = POLL_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Poll ``fetch`` until every job ended; show the status on ``out``; return the exit code."""
    live = out.isatty()
    last = ""
    started = time.monotonic()
    while True:
        jobs = fetch()
        line = status_line(jobs)
        if live:
            waited = format_duration(time.monotonic() - started)
            out.write(f"\r\x1b[K{line}  [waiting {waited}]")
            out.flush()
        elif line != last:
            print(line, file=out, flush=True)
        last = line
        if ended(jobs):
            if live:
                out.write("\n")
            return exit_code(jobs)
        sleep(interval)
