"""gcancel: cancel jobs (pending ones at once; running ones are stopped, then CANCELLED).

As SLURM's scancel: ids, and the filters ``-n/--name``, ``-u/--user``, ``-t/--state``,
``-p/--partition`` and ``--me``. With filters and no ids, every pending or running job that
passes them all (the caller's own unless ``-u`` names another user, which only an admin may
cancel); with ids too, only those of the named jobs that pass them. Picking is a convenience
of the client: the scheduler checks every cancel it is sent."""

from __future__ import annotations

import argparse
import sys
from typing import Any

# -t: SLURM's state names and codes (any case); rota has no suspended job, so S picks none
STATES = {
    "PENDING": {"PENDING"},
    "PD": {"PENDING"},
    "RUNNING": {"CONFIGURING", "RUNNING"},
    "R": {"CONFIGURING", "RUNNING"},
    "CONFIGURING": {"CONFIGURING"},
    "CF": {"CONFIGURING"},
    "SUSPENDED": set(),
    "S": set(),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gcancel",
        description="Cancel rota jobs: those named, or with filters (as scancel's) every "
        "pending or running job of yours (-u: that user's) that passes them all.",
    )
    p.add_argument(
        "ids",
        nargs="*",
        metavar="JOBID",
        help="123, 123_4 (one array task) or 123 (whole array)",
    )
    p.add_argument("-n", "--name", "--jobname", default="", help="only jobs of this name")
    p.add_argument("-u", "--user", default="", help="that user's jobs (default: yours)")
    p.add_argument("--me", action="store_true", help="only my jobs (the default with filters)")
    p.add_argument(
        "-t", "--state", default="", help="PENDING (PD), RUNNING (R) or CONFIGURING (CF)"
    )
    p.add_argument("-p", "--partition", default="", help="only jobs of this partition")
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.state and args.state.upper() not in STATES:
        parser.error(f"--state: {args.state!r} is not one of {', '.join(STATES)}")
    if not (args.ids or _filtered(args)):
        parser.error("name a job id, or filters (-n, -u, -t, -p, --me)")
    from rota.cli.errors import run_main

    return run_main(lambda: _cancel(args))


def _filtered(args: argparse.Namespace) -> bool:
    return bool(args.name or args.user or args.me or args.state or args.partition)


def _cancel(args: argparse.Namespace) -> int:
    from rota.cli.client import connect, current_user

    with connect(args.scheduler, args.ca) as client:
        ids = list(args.ids)
        if _filtered(args):
            ids = _picked(client, args, current_user())
            if not ids:
                return 0  # nothing picked is not an error, as with scancel
        results = client.cancel_jobs(ids, current_user())
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"gcancel: error: {r.message}", file=sys.stderr)
    return 1 if failed else 0


def _picked(client: Any, args: argparse.Namespace, me: str) -> list[str]:
    """Display ids of the pending and running jobs the filters pick."""
    from rota.cli.client import state_of

    user = me if args.me or not args.user else args.user
    states = STATES[args.state.upper()] if args.state else STATES["PD"] | STATES["R"]
    jobs = client.list_jobs(ids=list(args.ids), users=[user], accounts=[])
    return [
        j.id
        for j in jobs
        if state_of(j).value in states
        and (not args.name or j.name == args.name)
        and (not args.partition or args.partition in _partitions(j))
    ]


def _partitions(job: Any) -> list[str]:
    """Where a job runs, or while pending, the partitions it may run in."""
    if job.partition:
        return [job.partition]
    return job.spec.partition.split(",") if job.spec.partition else ["default"]  # no partitions


if __name__ == "__main__":
    sys.exit(main())
