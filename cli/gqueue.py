"""gqueue: list jobs, SLURM squeue style (pending and running by default)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from rota.cli.gqueue_format import Field
    from rota.states import JobState

SUMMARY_OVER = 50  # more rows than this end with a summary line


def build_parser() -> argparse.ArgumentParser:
    from rota.cli.style import help_formatter

    p = argparse.ArgumentParser(
        prog="gqueue",
        description="Show rota jobs.",
        add_help=False,
        formatter_class=help_formatter,
    )
    p.add_argument("--help", action="help", help="show this help and exit")
    p.add_argument("-t", "--states", help="'all', or states/codes separated by commas (PD,R,CD...)")
    p.add_argument(
        "-j",
        "--jobs",
        help="job ids separated by commas (123 lists all tasks of array 123; 12.0 a step)",
    )
    p.add_argument(
        "-s",
        "--steps",
        action="store_true",
        help="list running srun steps: STEPID NAME PARTITION USER TIME NODELIST",
    )
    p.add_argument("-u", "--user", help="only this user's jobs (commas for several)")
    p.add_argument("--me", action="store_true", help="only my jobs (the user of my token)")
    p.add_argument("-A", "--account", help="only this account's jobs (commas for several)")
    p.add_argument("--json", action="store_true", help="print a JSON list of job objects")
    p.add_argument(
        "--start", action="store_true", help="show estimated start times of pending jobs"
    )
    p.add_argument(
        "-o",
        "--format",
        help="squeue-style columns, e.g. '%%.10i %%.9j %%.8u %%.2t %%.10M %%.10l %%.6D %%R' "
        "(letters: i A F K j u a P q t T M l L D c C m b f E R N r V S e v Z o; %%.N "
        "right-aligns in N, %%N and %%-N left-align); default: SQUEUE_FORMAT when set",
    )
    p.add_argument(
        "-l",
        "--long",
        action="store_true",
        help="squeue -l's columns: -o '%%.18i %%.9P %%.8j %%.8u %%.8T %%.10M %%.9l %%.6D %%R'",
    )
    p.add_argument(
        "-h", "--noheader", action="store_true", help="no header and no summary line (as squeue -h)"
    )
    p.add_argument(
        "-r",
        "--array",
        action="store_true",
        help="one row per array task (pending tasks of an array share a row otherwise)",
    )
    p.add_argument(
        "--limit", type=int, metavar="N", help="show at most N rows, then a summary line"
    )
    p.add_argument(
        "--explain",
        metavar="JOBID",
        help="why a pending job waits: its priority factors, rank, reason and estimated start",
    )
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rota.cli.errors import run_main

    if args.explain:
        from rota.cli.gqueue_explain import explain

        return run_main(lambda: explain(args.explain, args.scheduler, args.json, args.ca))
    if args.steps or (args.jobs and "." in args.jobs):
        from rota.cli.gqueue_steps import show_steps

        return run_main(lambda: show_steps(args))
    return run_main(lambda: _show(args))


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


LONG = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"  # squeue -l's columns


def _show(args: argparse.Namespace) -> int:
    from rota.cli.errors import CliError
    from rota.cli.gqueue_format import parse_format
    from rota.cli.render import table
    from rota.states import JobState, parse_state

    if args.limit is not None and args.limit < 0:
        raise CliError(f"--limit: expected a number >= 0, got {args.limit}", 2)
    # as squeue: without -o, the SQUEUE_FORMAT of a SLURM user's shell
    fmt, origin = args.format or (LONG if args.long else ""), "--format"
    if not fmt and os.environ.get("SQUEUE_FORMAT"):
        fmt, origin = os.environ["SQUEUE_FORMAT"], "SQUEUE_FORMAT"
    try:
        parts = parse_format(fmt) if fmt else None
    except ValueError as exc:
        raise CliError(f"{origin}: {exc}", 2) from None
    users = _split(args.user)
    names = _split(args.states)
    states: list[JobState] = []
    all_states = [s.lower() for s in names] == ["all"]
    if names and not all_states:
        try:
            states = [parse_state(s) for s in names]
        except ValueError as exc:
            raise CliError(f"-t: {exc}", 2) from None
    elif not names and args.jobs:
        all_states = True  # naming a job shows it whatever its state, as squeue -j does
    # %p and %Q read each pending job's priority, which the scheduler then works out
    ranked = not (args.json or args.start) and any(
        getattr(p, "letter", "") in ("p", "Q") for p in parts or ()
    )
    jobs = _jobs(args, _split(args.jobs), users, _split(args.account), states, all_states, ranked)
    if args.json:
        print(json.dumps(jobs, indent=2))
        return 0
    if args.start:
        keys = ("id", "user", "name", "state_code")
        starts = [
            [*(j[k] for k in keys), j["estimated_start"] or "N/A", f"({j['reason']})"]
            for j in jobs
            if j["state"] == JobState.PENDING.value
        ]
        print(
            table(
                ["JOBID", "USER", "NAME", "ST", "START_TIME", "(REASON)"], starts, right=["JOBID"]
            )
        )
        return 0
    _print_jobs(args, jobs, parts)
    return 0


def _jobs(
    args: argparse.Namespace,
    ids: list[str],
    users: list[str],
    accounts: list[str],
    states: list[JobState],
    all_states: bool,
    ranked: bool,
) -> list[dict[str, Any]]:
    """The ``gqueue --json`` objects of the jobs asked for (``--me``: also the token's user's;
    ``ranked``: with ``priority``, a pending job's, else None): over the scheduler's HTTP API
    when it answers (no grpc to import), else over gRPC."""
    from rota.cli.http_client import http_client

    fast = http_client(args.scheduler, args.ca)
    if fast is not None:
        me = fast.whoami() if args.me else ""
        if me is not None:
            names = [s.value for s in states]
            wanted = [*users, me] if me else users
            jobs = fast.queue(ids, wanted, accounts, names, all_states, ranked)
            if jobs is not None:
                return jobs
    from rota.cli.client import connect, state_of
    from rota.cli.render import job_json

    with connect(args.scheduler, args.ca) as client:
        if args.me:  # the user of the token, whatever $USER says
            users = [*users, client.whoami()]
        listed = client.list_jobs(ids, users, accounts, states, all_states, ranked)
    shown = [job_json(j, state_of(j)) for j in listed]
    if ranked:  # the letters read it; only pending jobs carry one
        for job, msg in zip(shown, listed, strict=True):
            job["priority"] = msg.priority if job["state"] == "PENDING" else None
    return shown


def _print_jobs(
    args: argparse.Namespace, jobs: list[dict[str, Any]], parts: list[Field | str] | None
) -> None:
    """The table (default columns or ``--format``), cut at ``--limit``, then a summary line when
    rows were cut or there are more than SUMMARY_OVER of them."""
    from rota.cli.gqueue_format import (
        RIGHT,
        collapse_arrays,
        default_rows,
        formatted,
        paint,
        summary,
    )
    from rota.cli.render import table
    from rota.cli.style import colour_enabled, terminal_width

    now = time.time()
    rows = jobs if args.array else collapse_arrays(jobs)
    shown = rows if args.limit is None else rows[: args.limit]
    if parts is not None:
        lines = formatted(parts, shown, now)
    else:
        headers, cells = default_rows(shown, now, terminal_width(sys.stdout))
        decorate = paint if colour_enabled(sys.stdout) else None
        lines = table(headers, cells, right=RIGHT, paint=decorate).split("\n")
    if args.noheader:
        lines = lines[1:]
    if lines:
        print("\n".join(lines))
    if args.noheader:
        return
    if len(shown) < len(rows):
        print(f"{summary(jobs)} (showing {len(shown)} of {len(rows)} rows; --limit)")
    elif len(rows) > SUMMARY_OVER:
        print(summary(jobs))


def console() -> NoReturn:
    """The ``gqueue`` console script: ``main``, ending without the interpreter's teardown."""
    from rota.cli.errors import exit_without_teardown

    exit_without_teardown(main)


if __name__ == "__main__":
    sys.exit(main())
