"""The CSV booking sheet: what ``greserve import`` reads and ``greserve export --csv`` and the
dashboard's ``GET /api/v1/reservations.csv`` write (one writer for both, so what either writes
reads back).

The sheet has a header row with the columns ``who``, ``node``, ``gpus``, ``start``, ``end`` and
optionally ``name``, ``flags``, ``lend``, ``indices`` and ``unused``: ``who`` is space-separated user names,
``account:NAME`` for an account; ``gpus`` is a count of that node's GPUs, or ``all`` (or empty)
for every GPU; ``start`` and ``end`` take the forms of ``greserve create --start``; without
``name`` one is made of node, who and start day; ``flags`` is space-separated (``DAILY
MAINT``); ``lend`` is ``yes`` (default) or ``no``; ``indices`` names exactly which GPUs of the
node (space-separated, ``0 3``; ``gpus`` is then their count or empty); ``unused`` is what the
no-show rule does with an unused window, ``lend`` (default) or ``release``. ``write_sheet``
writes this sheet, one row per node of each booking, with every column, so that a booking
read back is the booking written: the same GPUs, window, people, flags and rules.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rota.when import parse_when

COLUMNS = ("who", "node", "gpus", "start", "end")
OPTIONAL = ("name", "flags", "lend", "indices", "unused")
UNUSED = ("lend", "release")


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
            f"header: missing column(s) {', '.join(missing)}; expected {','.join(COLUMNS)}[,name,...]"
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
    indices = _indices(row.get("indices", ""), gpus)
    lend = row.get("lend", "").lower()
    if lend not in ("", "yes", "no"):
        raise ValueError(f"lend: {row['lend']!r} is not yes or no")
    unused = row.get("unused", "").lower()
    if unused not in ("", *UNUSED):
        raise ValueError(f"unused: {row['unused']!r} is not {' or '.join(UNUSED)}")
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
        "gpus": 0 if indices else gpus,
        "gpu_indices": indices,
        "users": users,
        "accounts": accounts,
        "flags": [f.upper() for f in row.get("flags", "").replace(",", " ").split()],
        "no_lend": lend == "no",
        "unused": unused,
    }


def _indices(text: str, gpus: int) -> list[int]:
    """The GPU indices of an ``indices`` cell ([]: none named); ``gpus`` must be their count
    when it is given."""
    parts = text.replace(",", " ").split()
    if not all(p.isdigit() for p in parts):
        raise ValueError(f"indices: {text!r} is not GPU indices such as '0 3'")
    indices = sorted({int(p) for p in parts})
    if indices and gpus and gpus != len(indices):
        raise ValueError(f"gpus: {gpus}, but indices names {len(indices)} GPU(s)")
    return indices


@dataclass(frozen=True)
class Booking:
    """What the booking files (this sheet, ``rota.bookingcalendar``'s iCalendar) keep of a
    booking: ``gpus`` maps each node to its GPU indices; times are Unix seconds."""

    name: str
    start: float
    end: float
    gpus: Mapping[str, Sequence[int]]
    users: Sequence[str] = ()
    accounts: Sequence[str] = ()
    flags: Sequence[str] = ()
    lend: bool = True
    unused: str = "lend"
    created_at: float = 0.0


def write_sheet(bookings: Iterable[Booking]) -> str:
    """The booking sheet of ``bookings``, as ``read_sheet`` reads it: one row per node (in
    node order), named after the booking (``NAME.NODE`` when it spans several nodes, since each row is a booking
    of its own); times ISO 8601 UTC."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*COLUMNS, *OPTIONAL])
    for b in bookings:
        who = " ".join([*b.users, *(f"account:{a}" for a in b.accounts)])
        start, end = iso_time(b.start), iso_time(b.end)
        flags = " ".join(b.flags)
        lend = "yes" if b.lend else "no"
        for node, indices in sorted(b.gpus.items()):
            name = b.name if len(b.gpus) == 1 else f"{b.name}.{node}"
            ids = " ".join(map(str, sorted(indices)))
            row = [who, node, len(indices), start, end, name, flags, lend, ids, b.unused]
            writer.writerow(row)
    return out.getvalue()


def iso_time(t: float) -> str:
    """``t`` (Unix seconds) as ISO 8601 UTC, e.g. ``2026-11-23T17:05:00Z``."""
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
