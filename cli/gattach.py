"""gattach: a shell (or CMD) inside a running job's container, as the job's user.

For the job's owner or an admin; each use is recorded in the job's events and the audit log.
A terminal when stdin and stdout are terminals (``--pty``/``--no-pty`` to choose); the exit
code is CMD's.
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gattach", description="Open a shell or run CMD inside a running job's container."
    )
    p.add_argument("id", metavar="JOBID")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="CMD", help="default: a shell")
    p.add_argument("--node", "-w", default="", help="a gang job's node (default: rank 0's)")
    pty = p.add_mutually_exclusive_group()
    pty.add_argument("--pty", action="store_true", default=None, help="give CMD a terminal")
    pty.add_argument("--no-pty", dest="pty", action="store_false", help="plain pipes")
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rota.cli.errors import run_main

    return run_main(lambda: _attach(args))


def _attach(args: argparse.Namespace) -> int:
    from rota.cli.client import connect
    from rota.cli.session import run_session

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    terminal = sys.stdin.isatty() and sys.stdout.isatty()
    use_tty = args.pty if args.pty is not None else terminal
    opening = {"job_id": args.id, "kind": "exec", "command": command, "node": args.node}
    with connect(args.scheduler, args.ca) as client:
        return run_session(client, opening, use_tty)


if __name__ == "__main__":
    sys.exit(main())
