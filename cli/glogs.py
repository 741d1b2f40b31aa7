"""glogs: print a job's output, from any machine, through the scheduler (``-f`` follows)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="glogs", description="Show the output of a rota job.")
    p.add_argument("id", metavar="JOBID")
    p.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep printing until the job ends (a pending job: once it starts)",
    )
    p.add_argument(
        "--attempt", type=int, default=0, help="an earlier attempt (default: the latest)"
    )
    p.add_argument(
        "--node", default="", help="a gang job's node whose output to show (default: rank 0's)"
    )
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rota.cli.errors import run_main

    return run_main(lambda: _logs(args))


def _logs(args: argparse.Namespace) -> int:
    from rota.cli.client import connect

    out = sys.stdout.buffer
    with connect(args.scheduler, args.ca) as client:
        if args.follow and not args.attempt:
            _wait_started(client, args.id)
        for data in client.stream_logs(args.id, args.attempt, args.follow, args.node):
            out.write(data)
            out.flush()
    return 0


def _wait_started(client: Any, job_id: str) -> None:
    """Return once job ``job_id`` has started, saying once on stderr why it waits, as ``tail
    -F`` waits for a file to appear (CliError when it ended without starting); asks every
    second at first, then every 5 seconds."""
    from rota.cli.client import state_of
    from rota.cli.errors import CliError
    from rota.states import JobState

    delay, said = 1.0, False
    while True:
        job = client.get_job(job_id)
        state = state_of(job)
        if not job.attempt and state.terminal:
            raise CliError(
                f"job {job_id} ended {state.value} without starting: it has no output", 1
            )
        if job.attempt or state is not JobState.PENDING:
            return
        if not said:
            why = f" ({job.reason})" if job.reason else ""
            print(f"glogs: job {job_id} is pending{why}; waiting for it to start", file=sys.stderr)
            said = True
        time.sleep(delay)
        delay = min(delay * 2, 5.0)


if __name__ == "__main__":
    sys.exit(main())
