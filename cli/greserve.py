"""greserve: book GPUs for users or accounts over a window, list, show and delete bookings."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

EXAMPLES = """\
examples:
  greserve create --name lab-a --start "monday 09:00" --duration 5d --nodes gpu03 --users alice,bob
  greserve create --name demo --start now+1h --end "tomorrow 18:00" --gpus 4 --gpu-type A100 \\
      --accounts vision
  greserve create --name maint --start "saturday 08:00" --duration 4h --nodes gpu01,gpu02 \\
      --users root --flags MAINT,IGNORE_JOBS
  greserve list
  greserve show lab-a --json
  greserve delete lab-a
jobs use a reservation with `reservation: lab-a` in the job file or `gsub --reservation lab-a`.
"""


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="greserve",
        description="Reserve GPUs for users or accounts over a time window.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("create", help="book GPUs")
    c.add_argument("--name", required=True)
    c.add_argument("--start", required=True, help="now, now+2h, tomorrow 09:00, monday 09:00, ISO")
    end = c.add_mutually_exclusive_group(required=True)
    end.add_argument("--end", help="same forms as --start")
    end.add_argument("--duration", help="90m, 8h, 5d, 1-00:00:00 (a bare number is minutes)")
    what = c.add_mutually_exclusive_group(required=True)
    what.add_argument("--nodes", type=_csv, help="every GPU of these nodes: gpu01,gpu02")
    what.add_argument("--gpus", type=int, help="this many GPUs, chosen by the scheduler")
    c.add_argument("--gpu-type", default="", help="with --gpus: e.g. A100 (substring of the name)")
    c.add_argument("--gpus-per-node", type=int, default=0, help="with --gpus: K on each node")
    who = c.add_mutually_exclusive_group(required=True)
    who.add_argument("--users", type=_csv, help="alice,bob")
    who.add_argument("--accounts", type=_csv, help="vision,nlp")
    c.add_argument("--flags", type=_csv, default=[], help="MAINT, IGNORE_JOBS")
    c.add_argument("--no-lend", action="store_true", help="never lend idle GPUs")
    c.add_argument("--json", action="store_true")

    ls = sub.add_parser("list", help="open and upcoming reservations")
    ls.add_argument("--json", action="store_true")
    show = sub.add_parser("show", help="one reservation")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    delete = sub.add_parser("delete", help="remove a reservation without running jobs")
    delete.add_argument("name")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rota.cli.client import run_main

    return run_main(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    from rota.cli.client import CliError, as_dict, connect, current_user

    user = current_user()
    if args.command == "create":
        fields = _create_fields(args)
    with connect(args.scheduler, args.ca) as client:
        if args.command == "create":
            r = client.create_reservation(user, **fields)
            if args.json:
                print(json.dumps(as_dict(r), indent=2))
            else:
                print(f"reservation {r.name} created: {_gpus(r)}, {_window(r)}")
            return 0
        if args.command == "list":
            found = client.list_reservations(user)
            if args.json:
                print(json.dumps([as_dict(r) for r in found], indent=2))
            else:
                _table(found)
            return 0
        if args.command == "show":
            r = client.get_reservation(args.name, user)
            if args.json:
                print(json.dumps(as_dict(r), indent=2))
            else:
                _show(r)
            return 0
        if args.command == "delete":
            client.delete_reservation(args.name, user)
            print(f"reservation {args.name} deleted")
            return 0
    raise CliError(f"unknown command {args.command}", 2)


def _create_fields(args: argparse.Namespace) -> dict[str, Any]:
    from rota.cli.client import CliError
    from rota.units import parse_duration
    from rota.when import parse_when

    now = datetime.now().astimezone()
    try:
        start = parse_when(args.start, now)
    except ValueError as exc:
        raise CliError(f"--start: {exc}", 2) from None
    try:
        end = parse_when(args.end, now) if args.end else start + parse_duration(args.duration)
    except ValueError as exc:
        raise CliError(f"--{'end' if args.end else 'duration'}: {exc}", 2) from None
    if args.gpus is not None and args.gpus <= 0:
        raise CliError("--gpus: must be a positive count", 2)
    if args.nodes is not None and (args.gpu_type or args.gpus_per_node):
        raise CliError("--gpu-type/--gpus-per-node: only with --gpus N", 2)
    return {
        "name": args.name,
        "start": start,
        "end": end,
        "nodes": args.nodes or [],
        "gpus": args.gpus or 0,
        "gpu_type": args.gpu_type,
        "gpus_per_node": max(args.gpus_per_node, 0),
        "users": args.users or [],
        "accounts": args.accounts or [],
        "flags": [f.upper() for f in args.flags],
        "no_lend": args.no_lend,
    }


def _local(t: float) -> str:
    return datetime.fromtimestamp(t).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def _window(r: Any) -> str:
    return f"{_local(r.start)} to {_local(r.end)}"


def _gpus(r: Any) -> str:
    return " ".join(f"{g.node}:{','.join(str(i) for i in g.indices)}" for g in r.gpus)


def _who(r: Any) -> str:
    parts = []
    if r.users:
        parts.append("users " + ",".join(r.users))
    if r.accounts:
        parts.append("accounts " + ",".join(r.accounts))
    return "; ".join(parts)


def _table(found: list[Any]) -> None:
    from rota.cli.render import table

    rows = [
        [
            r.name,
            _local(r.start),
            _local(r.end),
            _gpus(r),
            _who(r),
            ",".join(r.flags) or "-",
            "yes" if r.lend else "no",
            str(len(r.running_jobs)),
        ]
        for r in found
    ]
    headers = ["NAME", "START", "END", "GPUS", "FOR", "FLAGS", "LEND", "RUNNING"]
    print(table(headers, rows) if rows else "no reservations")


def _show(r: Any) -> None:
    total = sum(len(g.indices) for g in r.gpus)
    print(f"reservation {r.name}")
    print(f"  window:   {_window(r)}")
    print(f"  gpus:     {total} ({_gpus(r)})")
    print(f"  for:      {_who(r)}")
    print(f"  flags:    {','.join(r.flags) or '-'}")
    print(f"  lend:     {'yes (idle GPUs run preemptible jobs of anyone)' if r.lend else 'no'}")
    print(f"  running:  {', '.join(str(j) for j in r.running_jobs) or '-'}")
    print(f"  created:  by {r.created_by or '?'} at {_local(r.created_at)}")


if __name__ == "__main__":
    sys.exit(main())
