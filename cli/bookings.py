"""Reservations as files: the iCalendar export, the CSV booking sheet of listed reservations
(written by ``rota.bookingsheet``, which ``greserve import`` reads) and ``--json``'s objects.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rota.bookingsheet import SheetBooking, iso_time, write_sheet

PERIODS = {"DAILY": "DAILY", "WEEKLY": "WEEKLY"}


def to_csv(reservations: list[Any]) -> str:
    """The booking sheet (``rota.bookingsheet``) of ``reservations`` (``rota.v1.Reservation``)."""
    return write_sheet(
        SheetBooking(
            name=r.name,
            start=r.start,
            end=r.end,
            gpus={g.node: list(g.indices) for g in r.gpus},
            users=list(r.users),
            accounts=list(r.accounts),
            flags=list(r.flags),
            lend=r.lend,
            unused=r.unused or "lend",
        )
        for r in reservations
    )


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
