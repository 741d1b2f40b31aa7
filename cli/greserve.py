"""greserve: book GPUs for users or accounts over a window, list, show and delete bookings."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from rota.cli.subcommands import name_subcommands

EXAMPLES = """\
examples:
  greserve create --name lab-a --start "monday 09:00" --duration 5d --nodes gpu03 --users alice,bob
  greserve create --name demo --start now+1h --end "tomorrow 18:00" --gpus 4 --gpu-type A100 \\
      --accounts vision
  greserve create --name maint --start "saturday 08:00" --duration 4h --nodes gpu01,gpu02 \\
      --users root --flags MAINT,IGNORE_JOBS
  greserve update lab-a --end "friday 18:00" --users alice,bob,carol
  greserve list
  greserve show lab-a --json
  greserve calendar --days 7
  greserve export --ics -o bookings.ics
  greserve import bookings.csv --dry-run
  greserve delete lab-a
jobs use a reservation with `reservation: lab-a` in the job file or `gsub --reservation lab-a`.
"""


CALENDAR_WIDTH = 80  # greserve calendar's width in a pipe or file without COLUMNS


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
    _booking_options(c, required=True)
    u = sub.add_parser("update", help="change a booking (only the options given)")
    u.add_argument("name")
    _booking_options(u, required=False)

    ls = sub.add_parser("list", help="open and upcoming reservations")
    ls.add_argument("--json", action="store_true")
    show = sub.add_parser("show", help="one reservation")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    delete = sub.add_parser("delete", help="remove a reservation without running jobs")
    delete.add_argument("name")
    cal = sub.add_parser("calendar", help="GPUs against time: bookings, running jobs, now")
    cal.add_argument("--from", dest="start", default="today", help="first day (as --start)")
    cal.add_argument("--days", type=int, default=7)
    cal.add_argument("--node", action="append", default=[], help="only this node (repeatable)")
    ex = sub.add_parser("export", help="write the bookings as iCalendar or as an import sheet")
    form = ex.add_mutually_exclusive_group(required=True)
    form.add_argument("--ics", action="store_true", help="iCalendar, for calendar programs")
    form.add_argument("--csv", action="store_true", help="the CSV sheet `greserve import` reads")
    ex.add_argument("-o", "--output", default="-", help="file (default: standard output)")
    im = sub.add_parser(
        "import",
        help="book the rows of a CSV sheet (who,node,gpus,start,end[,name,flags,lend,indices,unused])",
    )
    im.add_argument("sheet")
    im.add_argument("--dry-run", action="store_true", help="check every row, create nothing")
    im.add_argument("--skip-bad", action="store_true", help="create the good rows anyway")
    return p


def _booking_options(c: argparse.ArgumentParser, required: bool) -> None:
    if required:
        c.add_argument("--name", required=True)
    c.add_argument("--start", required=required, help="now, now+2h, tomorrow 09:00, ISO")
    end = c.add_mutually_exclusive_group(required=required)
    end.add_argument("--end", help="same forms as --start")
    end.add_argument("--duration", help="90m, 8h, 5d, 1-00:00:00 (a bare number is minutes)")
    c.add_argument("--nodes", type=_csv, help="every GPU of these nodes (with --gpus: N of them)")
    c.add_argument("--gpus", type=int, help="this many GPUs, chosen by the scheduler")
    c.add_argument("--gpu-type", default="", help="with --gpus: e.g. A100 (substring of the name)")
    c.add_argument("--gpus-per-node", type=int, default=0, help="with --gpus: K on each node")
    who = c.add_mutually_exclusive_group(required=required)
    who.add_argument("--users", type=_csv, help="alice,bob")
    who.add_argument("--accounts", type=_csv, help="vision,nlp")
    c.add_argument("--flags", type=_csv, help="MAINT,IGNORE_JOBS,FLEX,DAILY,WEEKLY,PURGE_COMP")
    lend = c.add_mutually_exclusive_group()
    lend.add_argument("--no-lend", action="store_true", help="never lend idle GPUs")
    if not required:
        lend.add_argument("--lend", action="store_true", help="lend idle GPUs again")
    c.add_argument(
        "--unused",
        choices=("lend", "release"),
        help="when its owners leave a window unused for the scheduler's unused_after (30 min "
        "by default): lend its GPUs to the queue until an owner's job arrives (lend, the "
        "default) or release the window (release)",
    )
    c.add_argument("--json", action="store_true")


def main(argv: list[str] | None = None) -> int:
    args = name_subcommands(build_parser()).parse_args(argv)
    from rota.cli.errors import run_main

    return run_main(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    from rota.cli.bookings import reservation_json
    from rota.cli.client import connect
    from rota.cli.errors import CliError

    if args.command == "create":
        fields = _create_fields(args)
    if args.command == "update":
        given, fields = _update_fields(args)
    if args.command == "import":
        return _import(args)
    with connect(args.scheduler, args.ca) as client:
        if args.command == "update":
            r = client.update_reservation(args.name, given, **fields)
            if args.json:
                print(json.dumps(reservation_json(r), indent=2))
            else:
                print(f"reservation {r.name} updated: {_gpus(r)}, {_window(r)}")
            return 0
        if args.command == "calendar":
            _calendar(args, client)
            return 0
        if args.command == "export":
            _export(args, client)
            return 0
        if args.command == "create":
            r = client.create_reservation(**fields)
            if args.json:
                print(json.dumps(reservation_json(r), indent=2))
            else:
                print(f"reservation {r.name} created: {_gpus(r)}, {_window(r)}")
            return 0
        if args.command == "list":
            found = client.list_reservations()
            if args.json:
                print(json.dumps([reservation_json(r) for r in found], indent=2))
            else:
                _table(found)
            return 0
        if args.command == "show":
            r = client.get_reservation(args.name)
            if args.json:
                print(json.dumps(reservation_json(r), indent=2))
            else:
                _show(r)
            return 0
        if args.command == "delete":
            client.delete_reservation(args.name)
            print(f"reservation {args.name} deleted")
            return 0
    raise CliError(f"unknown command {args.command}", 2)


def _create_fields(args: argparse.Namespace) -> dict[str, Any]:
    from rota.cli.errors import CliError
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
    if args.nodes is None and args.gpus is None:
        raise CliError("--nodes/--gpus: give --nodes LIST, --gpus N or both", 2)
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
        "flags": [f.upper() for f in args.flags or []],
        "no_lend": args.no_lend,
        "unused": args.unused or "",
    }


def _update_fields(args: argparse.Namespace) -> tuple[list[str], dict[str, Any]]:
    """The fields ``greserve update`` changes, and their values."""
    from rota.cli.errors import CliError
    from rota.units import parse_duration
    from rota.when import parse_when

    now = datetime.now().astimezone()
    given: list[str] = []
    fields: dict[str, Any] = {}
    try:
        if args.start:
            fields["start"], given = parse_when(args.start, now), [*given, "start"]
        if args.end:
            fields["end"], given = parse_when(args.end, now), [*given, "end"]
    except ValueError as exc:
        raise CliError(f"--start/--end: {exc}", 2) from None
    if args.duration:
        if not args.start:
            raise CliError("--duration: give --start too (or use --end)", 2)
        fields["end"] = fields["start"] + parse_duration(args.duration)
        given.append("end")
    simple = {
        "nodes": args.nodes,
        "gpus": args.gpus,
        "gpu_type": args.gpu_type or None,
        "gpus_per_node": args.gpus_per_node or None,
        "users": args.users,
        "accounts": args.accounts,
        "flags": [f.upper() for f in args.flags] if args.flags is not None else None,
    }
    for key, value in simple.items():
        if value is not None:
            fields[key] = value
            given.append(key)
    if args.no_lend or args.lend:
        fields["no_lend"] = args.no_lend
        given.append("lend")
    if args.unused:
        fields["unused"] = args.unused
        given.append("unused")
    if not given:
        raise CliError("update: give at least one option to change", 2)
    return given, fields


def _calendar(args: argparse.Namespace, client: Any) -> None:
    import time

    from rota.cli.calendar_view import Booking, Running, render
    from rota.cli.errors import CliError
    from rota.cli.style import colour_enabled, terminal_width
    from rota.when import parse_when

    try:
        start = parse_when(args.start, datetime.now().astimezone())
    except ValueError as exc:
        raise CliError(f"--from: {exc}", 2) from None
    if args.days < 1:
        raise CliError("--days: must be at least 1", 2)
    nodes = [n for n in client.list_nodes() if not args.node or n.name in args.node]
    gpus = [(n.name, g.info.index) for n in nodes for g in n.gpus]
    down = {
        n.name: f"{n.state}{f' ({n.reason})' if n.reason else ''}"
        for n in nodes
        if n.state in ("DRAINING", "DRAINED", "DOWN")
    }
    bookings = [
        Booking(
            r.name,
            r.start,
            r.end,
            frozenset((g.node, i) for g in r.gpus for i in g.indices),
            tuple(r.flags),
        )
        for r in client.list_reservations()
    ]
    running = [
        Running(
            j.id,
            j.start_time,
            j.start_time + j.time_limit,
            frozenset((node, i) for node, ids in j.gpu_ids.items() for i in ids.indices),
            j.user,
        )
        for j in client.list_jobs([], [], [])
        if j.start_time
    ]
    width = terminal_width(sys.stdout) or CALENDAR_WIDTH
    colour = colour_enabled(sys.stdout)
    print(render(gpus, bookings, running, start, args.days, time.time(), colour, width, down))


def _export(args: argparse.Namespace, client: Any) -> None:
    import socket

    from rota.cli.bookings import to_csv, to_ics

    found = client.list_reservations()
    data = to_csv(found).encode() if args.csv else to_ics(found, socket.gethostname())
    if args.output == "-":
        sys.stdout.write(data.decode())
    else:
        with open(args.output, "wb") as f:
            f.write(data)
        print(f"wrote {args.output}")


def _import(args: argparse.Namespace) -> int:
    """Check every row of the sheet, then create all of them, or none when a row is bad
    (unless --skip-bad); the report names each row by its line."""
    from rota.bookingsheet import read_sheet
    from rota.cli.client import connect
    from rota.cli.errors import CliError

    try:
        with open(args.sheet, encoding="utf-8") as f:
            rows = read_sheet(f.read(), datetime.now().astimezone())
    except (OSError, ValueError) as exc:
        raise CliError(f"{args.sheet}: {exc}", 2) from None
    good = [r for r in rows if not r.error]
    bad_parse = len(good) < len(rows)
    dry = args.dry_run or (bad_parse and not args.skip_bad)
    with connect(args.scheduler, args.ca) as client:
        reply = client.import_reservations([r.fields for r in good], dry, args.skip_bad)
    for r, error in zip(good, reply.errors, strict=True):
        r.error = error
    refused = [r for r in rows if r.error]
    for r in rows:
        name = r.fields.get("name", "")
        status = f"refused: {r.error}" if r.error else "ok"
        print(f"{args.sheet}:{r.line}: {name or '-'}: {status}")
    made = len(rows) - len(refused) if reply.created else 0
    print(f"{made} reservation(s) created, {len(refused)} row(s) refused", end="")
    print(" (dry run)" if args.dry_run else "" if reply.created or not refused else
          " (nothing created: fix the rows or use --skip-bad)")  # fmt: skip
    return 1 if refused and not args.skip_bad else 0


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
    booked = r.booked_gpu_seconds / 3600
    owners, lent = r.owner_gpu_seconds / 3600, r.lent_gpu_seconds / 3600
    idle = max(0.0, booked - owners - lent)
    released = r.released_gpu_seconds / 3600
    unused = {"lend": "lend its GPUs to the queue", "release": "release it"}.get(r.unused, "-")
    if r.given_back:
        waited = round((r.given_back - max(r.start, r.created_at)) / 60)
        unused += f" (given back at {_local(r.given_back)}: no job of its owners in {waited} min)"
    print(f"reservation {r.name}")
    print(f"  window:   {_window(r)}")
    print(f"  gpus:     {total} ({_gpus(r)})")
    print(f"  for:      {_who(r)}")
    print(f"  flags:    {','.join(r.flags) or '-'}")
    print(f"  lend:     {'yes (idle GPUs run preemptible jobs of anyone)' if r.lend else 'no'}")
    print(f"  unused:   {unused}")
    print(f"  running:  {', '.join(str(j) for j in r.running_jobs) or '-'}")
    print(f"  created:  by {r.created_by or '?'} at {_local(r.created_at)}")
    print(
        f"  usage:    {booked:.1f} GPU-h booked so far: {owners:.1f} used by its owners, "
        f"{lent:.1f} lent, {idle:.1f} idle, {released:.1f} released"
    )


if __name__ == "__main__":
    sys.exit(main())
