"""gacct: finished jobs with GPU-hours and NVML figures (like ``sacct``); ``--summary`` totals
per user and account; ``--efficiency`` jobs whose GPUs stayed mostly idle or nearly ran out of
memory, or that an idle rule ended."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rota.efficiency import IDLE_BELOW, efficiency_flags

HEADERS = [
    "JOBID",
    "NAME",
    "USER",
    "ACCOUNT",
    "STATE",
    "EXIT",
    "SUBMIT",
    "START",
    "END",
    "ELAPSED",
    "GPUS",
    "GPU_HOURS",
    "GPU_UTIL",
    "GPU_MEM_PEAK",
    "NODES",
    "RESERVATION",
]


RIGHT = ["EXIT", "ELAPSED", "GPUS", "GPU_HOURS", "GPU_UTIL", "JOBS", "BOOKED_UNUSED"]


def _shown(args: argparse.Namespace) -> list[str]:
    """The columns ``-o/--format`` names (all by default); a usage error names a bad one."""
    from rota.cli.errors import CliError
    from rota.cli.gacct_format import columns

    if not args.format:
        return HEADERS
    try:
        return columns(args.format)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


def build_parser() -> argparse.ArgumentParser:
    from rota.when import HELP, LOCAL

    p = argparse.ArgumentParser(
        prog="gacct",
        description="Finished rota jobs: GPU-hours, mean GPU utilisation, peak GPU memory. "
        "Admins see every user's jobs, other users only their own.",
    )
    p.add_argument(
        "-u", "--user", help="only these users (comma-separated); default: you (your token's user)"
    )
    p.add_argument("-a", "--allusers", action="store_true", help="every user's jobs")
    p.add_argument("-A", "--account", help="only these accounts (comma-separated)")
    p.add_argument(
        "-S",
        "--starttime",
        help=f"jobs that ended at or after this ({HELP.format(zone=LOCAL)}); default: today",
    )
    p.add_argument("-E", "--endtime", help="jobs that ended at or before this; default: now")
    p.add_argument("-s", "--state", help="only these final states/codes (CD,F,CA,TO,NF,OOM,PR)")
    p.add_argument("-j", "--jobs", help="only these job ids (comma-separated)")
    p.add_argument("--limit", type=int, default=0, help="at most N jobs, most recent first")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--summary",
        action="store_true",
        help="GPU-hours and mean GPU utilisation per user and per account, and per user the "
        "GPU-hours of their bookings that no job of the booking used (BOOKED_UNUSED: lent, idle "
        "or released; windows that ended in the period) (every user you may see; default "
        "period: the last 7 days)",
    )
    mode.add_argument(
        "--efficiency",
        action="store_true",
        help="jobs whose GPUs stayed mostly idle, and jobs that came within 5%% of their GPU "
        "memory (every user you may see; default period: the last 7 days)",
    )
    p.add_argument(
        "--idle-below",
        type=float,
        default=IDLE_BELOW,
        metavar="PERCENT",
        help=f"--efficiency: mean GPU utilisation that counts as idle (default {IDLE_BELOW:g})",
    )
    p.add_argument(
        "-o",
        "--format",
        help="these columns, as sacct's: JobID,JobName,State,ExitCode,Elapsed ... (%%WIDTH "
        "suffixes accepted)",
    )
    p.add_argument(
        "-X", "--allocations", action="store_true", help="jobs only, without their steps' lines"
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON")
    out.add_argument("--csv", action="store_true", help="print CSV")
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rota.cli.errors import run_main

    return run_main(lambda: _acct(args))


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def _filter(args: argparse.Namespace, now: datetime) -> Any:
    from rota.cli.client import AccountingFilter
    from rota.cli.errors import CliError
    from rota.states import parse_state
    from rota.when import parse_when

    wide = args.summary or args.efficiency
    users = _split(args.user)
    mine = not users and not (args.allusers or wide or args.jobs)
    try:
        states = tuple(parse_state(s) for s in _split(args.state))
        default_start = "now-7days" if wide else "today"
        start = parse_when(args.starttime or default_start, now, "-S/--starttime")
        end = parse_when(args.endtime, now, "-E/--endtime") if args.endtime else 0.0
    except ValueError as exc:
        raise CliError(str(exc), 2) from None
    if args.jobs and not args.starttime:
        start = 0.0  # naming jobs finds them whenever they ended, as sacct -j does
    return AccountingFilter(
        mine=mine,
        ids=_split(args.jobs),
        users=users,
        accounts=_split(args.account),
        states=states,
        start=start,
        end=end,
        limit=max(0, args.limit),
    )


def _acct(args: argparse.Namespace) -> int:
    from rota.cli.client import connect

    query = _filter(args, datetime.now().astimezone())
    shown = _shown(args)
    with connect(args.scheduler, args.ca) as client:
        if args.summary:
            return _print_summary(client.usage_summary(query), args)
        jobs = client.list_finished(query)
    if args.allocations:
        jobs = [j for j in jobs if "." not in j.id]
    if args.efficiency:
        return _print_efficiency(jobs, args)
    if shown == HEADERS or args.json or args.csv:
        _emit([job_row(j) for j in jobs], HEADERS, args)
        return 0
    from rota.cli.render import table

    at = [HEADERS.index(h) for h in shown]
    cells = [[c[i] for i in at] for c in (_cells(job_row(j)) for j in jobs)]
    print(table(shown, cells, [h for h in shown if h in RIGHT]))
    return 0


def job_row(job: Any) -> dict[str, Any]:
    """The documented ``gacct --json`` object of one finished job."""
    from rota.cli.client import state_of
    from rota.jobview import iso

    return {
        "id": job.id,
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "state": state_of(job).value,
        "exit_code": job.exit_code if job.has_exit_code else None,  # None: it never ran
        "submit_time": iso(job.submit_time),
        "start_time": iso(job.start_time),
        "end_time": iso(job.end_time),
        "elapsed": round(job.elapsed, 3),
        "gpus": job.gpus,
        "gpu_hours": round(job.gpu_hours, 6),
        "nodes": list(job.nodes),
        "reservation": job.reservation,
        "gpu_utilization": round(job.gpu_utilization, 2) if job.gpu_samples else None,
        "gpu_memory_peak": job.gpu_memory_peak if job.gpu_samples else None,
        "gpu_memory_total": job.gpu_memory_total if job.gpu_samples else None,
        "gpu_samples": job.gpu_samples,
    }


def _cells(row: dict[str, Any]) -> list[str]:
    from rota.units import format_duration, format_size

    util, peak = row["gpu_utilization"], row["gpu_memory_peak"]
    return [
        row["id"],
        row["name"],
        row["user"],
        row["account"],
        row["state"],
        "-" if row["exit_code"] is None else str(row["exit_code"]),
        _local(row["submit_time"]),
        _local(row["start_time"]),
        _local(row["end_time"]),
        format_duration(row["elapsed"]),
        str(row["gpus"]),
        f"{row['gpu_hours']:.2f}",
        "-" if util is None else f"{util:.0f}%",
        "-" if peak is None else f"{format_size(peak)}/{format_size(row['gpu_memory_total'])}",
        ",".join(row["nodes"]) or "-",
        row["reservation"] or "-",
    ]


def _local(iso_time: str | None) -> str:
    if not iso_time:
        return "-"
    return datetime.fromisoformat(iso_time).astimezone().strftime("%Y-%m-%dT%H:%M:%S")


def _emit(rows: Sequence[dict[str, Any]], headers: Sequence[str], args: argparse.Namespace) -> None:
    """Rows as JSON, CSV (the JSON keys as columns) or a table."""
    from rota.cli.render import table

    if args.json:
        print(json.dumps(list(rows), indent=2))
    elif args.csv:
        keys = list(rows[0]) if rows else [h.lower() for h in headers]
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(keys)
        for row in rows:
            writer.writerow(
                [
                    ";".join(v) if isinstance(v, list) else ("" if v is None else v)
                    for v in row.values()
                ]
            )
    else:
        print(
            table(
                list(headers), [_cells(r) if "id" in r else list(r.values()) for r in rows], RIGHT
            )
        )


def _print_summary(reply: Any, args: argparse.Namespace) -> int:
    def totals(kind: str, items: Any) -> list[dict[str, Any]]:
        return [
            {
                "kind": kind,
                "name": t.name,
                "jobs": t.jobs,
                "gpu_hours": round(t.gpu_hours, 6),
                "gpu_utilization": round(t.gpu_utilization, 2) if t.gpu_samples else None,
                "gpu_samples": t.gpu_samples,
                "booked_unused": round(t.booked_unused_gpu_hours, 6) if kind == "user" else None,
            }
            for t in items
        ]

    rows = totals("user", reply.users) + totals("account", reply.accounts)
    if args.json or args.csv:
        _emit(rows, ["KIND", "NAME", "JOBS", "GPU_HOURS", "GPU_UTIL", "BOOKED_UNUSED"], args)
        return 0
    shown = [
        {
            "KIND": r["kind"],
            "NAME": r["name"],
            "JOBS": str(r["jobs"]),
            "GPU_HOURS": f"{r['gpu_hours']:.2f}",
            "GPU_UTIL": "-" if r["gpu_utilization"] is None else f"{r['gpu_utilization']:.0f}%",
            "BOOKED_UNUSED": "-" if r["booked_unused"] is None else f"{r['booked_unused']:.2f}",
        }
        for r in rows
    ]
    _emit(shown, ["KIND", "NAME", "JOBS", "GPU_HOURS", "GPU_UTIL", "BOOKED_UNUSED"], args)
    return 0


def _print_efficiency(jobs: Sequence[Any], args: argparse.Namespace) -> int:
    rows = []
    for job in jobs:
        row = job_row(job)
        flags = efficiency_flags(
            row["gpu_utilization"],
            row["gpu_memory_peak"],
            row["gpu_memory_total"],
            args.idle_below,
            job.reason,
        )
        if flags:
            rows.append({**row, "flags": flags})
    if args.json or args.csv:
        _emit(rows, [*HEADERS, "FLAGS"], args)
        return 0
    shown = [
        dict(
            zip(
                [
                    "JOBID",
                    "USER",
                    "ACCOUNT",
                    "GPUS",
                    "GPU_HOURS",
                    "GPU_UTIL",
                    "GPU_MEM_PEAK",
                    "FLAGS",
                ],
                [c for i, c in enumerate(_cells(r)) if i in (0, 2, 3, 10, 11, 12, 13)]
                + [",".join(r["flags"])],
                strict=True,
            )
        )
        for r in rows
    ]
    _emit(
        shown,
        ["JOBID", "USER", "ACCOUNT", "GPUS", "GPU_HOURS", "GPU_UTIL", "GPU_MEM_PEAK", "FLAGS"],
        args,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
