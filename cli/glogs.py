"""glogs: print a job's output, from any machine, through the scheduler (``-f`` follows)."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="glogs", description="Show the output of a rota job.")
    p.add_argument("id", metavar="JOBID")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing until the job ends")
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
        for data in client.stream_logs(args.id, args.attempt, args.follow, args.node):
            out.write(data)
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
