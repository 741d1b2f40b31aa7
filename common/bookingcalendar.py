"""Bookings as an iCalendar file: what ``greserve export --ics`` writes and the dashboard's
read-only calendar feed serves (one writer for both). One event per booking, DAILY and WEEKLY
ones recurring.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from rota.bookingsheet import Booking

PERIODS = ("DAILY", "WEEKLY")


def write_ics(bookings: Iterable[Booking], host: str) -> bytes:
    """The calendar of ``bookings``; each event's UID is ``NAME@host``."""
    from icalendar import Calendar, Event  # only the commands that write a calendar load it

    cal = Calendar()
    cal.add("prodid", "-//rota//greserve//EN")
    cal.add("version", "2.0")
    for b in bookings:
        nodes = sorted(b.gpus.items())
        gpus = " ".join(f"{node}:{','.join(map(str, idx))}" for node, idx in nodes)
        who = ", ".join([*b.users, *(f"account {a}" for a in b.accounts)])
        event = Event()
        event.add("uid", f"{b.name}@{host}")
        event.add("summary", f"{b.name}: {sum(len(i) for _, i in nodes)} GPU(s) for {who}")
        event.add("dtstart", datetime.fromtimestamp(b.start, UTC))
        event.add("dtend", datetime.fromtimestamp(b.end, UTC))
        event.add("dtstamp", datetime.fromtimestamp(b.created_at or b.start, UTC))
        event.add("description", f"GPUs {gpus}; flags {','.join(b.flags) or '-'}")
        event.add("location", ", ".join(node for node, _ in nodes))
        freq = next((f for f in b.flags if f in PERIODS), "")
        if freq:
            event.add("rrule", {"freq": freq})
        cal.add_component(event)
    return bytes(cal.to_ical())
