"""Reservations as files: an iCalendar export and the CSV booking sheet ``greserve import``
reads.

The sheet has a header row with the columns ``who``, ``node``, ``gpus``, ``start``, ``end`` and
optionally ``name``, ``flags`` and ``lend``: ``who`` is space-separated user names,
``account:NAME`` for an account; ``gpus`` is a count of that node's GPUs, or ``all`` (or empty)
for every GPU; ``start`` and ``end`` take the forms of ``greserve create --start``; without
``name`` one is made of node, who and start day; ``flags`` is space-separated (``DAILY
MAINT``); ``lend`` is ``yes`` (default) or ``no``. ``to_csv`` writes this sheet
(``greserve export --csv``), one row per node of each booking.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rota.when import parse_when

COLUMNS = ("who", "node", "gpus", "start", "end")
OPTIONAL = ("name", "flags", "lend")
PERIODS = {"DAILY": "DAILY", "WEEKLY": "WEEKLY"}


@dataclass
class SheetRow:
    line: int  # line number in the file (the header is line 1)
    fields: dict[str, Any] = field(default_factory=dict)  # CreateReservationRequest fields
    error: str = ""


def read_sheet(text: str, now: datetime) -> list[SheetRow]:
    """Every data row of a booking sheet, each with its request fields or its error."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in reader.fieldnames or []]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise ValueError(
            f"header: missing column(s) {', '.join(missing)}; expected {','.join(COLUMNS)}[,name]"
        )
    rows: list[SheetRow] = []
    names: set[str] = set()
    for line, raw in enumerate(reader, start=2):
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in raw.items()}
        if not any(row.values()):
            continue
        out = SheetRow(line)
        try:
            out.fields = _fields(row, now, names)
        except ValueError as exc:
            out.error = str(exc)
        rows.append(out)
    return rows


def _fields(row: dict[str, str], now: datetime, names: set[str]) -> dict[str, Any]:
    users, accounts = [], []
    for who in row["who"].split():
        if who.startswith("account:"):
            accounts.append(who.removeprefix("account:"))
        else:
            users.append(who)
    if not users and not accounts:
        raise ValueError("who: empty; give user names or account:NAME")
    if not row["node"]:
        raise ValueError("node: empty")
    gpus_text = row["gpus"].lower()
    if gpus_text in ("", "all"):
        gpus = 0
    elif gpus_text.isdigit() and int(gpus_text) > 0:
        gpus = int(gpus_text)
    else:
        raise ValueError(f"gpus: {row['gpus']!r} is not a positive count or 'all'")
    try:
        start = parse_when(row["start"], now)
    except ValueError as exc:
        raise ValueError(f"start: {exc}") from None
    try:
        end = parse_when(row["end"], now)
    except ValueError as exc:
        raise ValueError(f"end: {exc}") from None
    lend = row.get("lend", "").lower()
    if lend not in ("", "yes", "no"):
        raise ValueError(f"lend: {row['lend']!r} is not yes or no")
    name = row.get("name", "")
    if not name:
        day = datetime.fromtimestamp(start).strftime("%Y%m%d")
        base = re.sub(r"[^A-Za-z0-9._-]", "-", f"{row['node']}-{(users + accounts)[0]}-{day}")
        name, k = base, 2
        while name in names:
            name, k = f"{base}-{k}", k + 1
    names.add(name)
    return {
        "name": name,
        "start": start,
        "end": end,
        "nodes": [row["node"]],
        "gpus": gpus,
        "users": users,
        "accounts": accounts,
        "flags": [f.upper() for f in row.get("flags", "").replace(",", " ").split()],
        "no_lend": lend == "no",
    }


def to_csv(reservations: list[Any]) -> str:
    """The booking sheet of ``reservations`` (``rota.v1.Reservation``), as ``read_sheet``
    reads it: one row per node, named after the booking (``NAME.NODE`` when it spans
    several nodes, since each row is a booking of its own); times ISO 8601 UTC."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*COLUMNS, *OPTIONAL])
    for r in reservations:
        who = " ".join([*r.users, *(f"account:{a}" for a in r.accounts)])
        for g in r.gpus:
            name = r.name if len(r.gpus) == 1 else f"{r.name}.{g.node}"
            start, end = iso_time(r.start), iso_time(r.end)
            flags = " ".join(r.flags)
            lend = "yes" if r.lend else "no"
            writer.writerow([who, g.node, len(g.indices), start, end, name, flags, lend])
    return out.getvalue()


def iso_time(t: float) -> str:
    """``t`` (Unix seconds) as ISO 8601 UTC, e.g. ``2026-11-23T17:05:00Z``."""
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def reservation_json(r: Any) -> dict[str, Any]:
    """``greserve list/show/create --json``'s object of a ``rota.v1.Reservation``: its
    fields with ``start``, ``end`` and ``created_at`` ISO 8601 UTC (null when unset), as in
    ``gacct --json``."""
    from rota.cli.client import as_dict

    data = as_dict(r)
    for key in ("start", "end", "created_at", "given_back"):
        value = getattr(r, key)
        data[key] = iso_time(value) if value else None
    return data


def to_ics(reservations: list[Any], host: str) -> bytes:
    """An iCalendar file with one event per reservation (``rota.v1.Reservation``); DAILY and
    WEEKLY ones recur."""
    from icalendar import Calendar, Event

    cal = Calendar()
    cal.add("prodid", "-//rota//greserve//EN")
    cal.add("version", "2.0")
    for r in reservations:
        gpus = " ".join(f"{g.node}:{','.join(str(i) for i in g.indices)}" for g in r.gpus)
        who = ", ".join([*r.users, *(f"account {a}" for a in r.accounts)])
        event = Event()
        event.add("uid", f"{r.name}@{host}")
        event.add("summary", f"{r.name}: {sum(len(g.indices) for g in r.gpus)} GPU(s) for {who}")
        event.add("dtstart", datetime.fromtimestamp(r.start, UTC))
        event.add("dtend", datetime.fromtimestamp(r.end, UTC))
        event.add("dtstamp", datetime.fromtimestamp(r.created_at or r.start, UTC))
        event.add("description", f"GPUs {gpus}; flags {','.join(r.flags) or '-'}")
        event.add("location", ", ".join(sorted({g.node for g in r.gpus})))
        freq = next((PERIODS[f] for f in r.flags if f in PERIODS), "")
        if freq:
            event.add("rrule", {"freq": freq})
        cal.add_component(event)
    return cal.to_ical()
