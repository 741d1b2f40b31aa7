"""gcancel: cancel jobs (pending ones at once; running ones are stopped, then CANCELLED)."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gcancel", description="Cancel rota jobs.")
    p.add_argument(
        "ids", nargs="+", metavar="JOBID", help="123, 123_4 (one array task) or 123 (whole array)"
    )
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rota.cli.errors import run_main

    return run_main(lambda: _cancel(args))


def _cancel(args: argparse.Namespace) -> int:
    from rota.cli.client import connect, current_user

    with connect(args.scheduler, args.ca) as client:
        results = client.cancel_jobs(args.ids, current_user())
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"gcancel: error: {r.message}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
