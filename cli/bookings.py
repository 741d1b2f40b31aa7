"""Reservations as files: an iCalendar export and the CSV booking sheet ``greserve import``
reads.

The sheet has a header row with the columns ``who``, ``node``, ``gpus``, ``start``, ``end`` and
optionally ``name``: ``who`` is space-separated user names, ``account:NAME`` for an account;
``gpus`` is a count of that node's GPUs, or ``all`` (or empty) for every GPU; ``start`` and
``end`` take the forms of ``greserve create --start``; without ``name`` one is made of node,
who and start day.
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
    }


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
