"""Listed reservations (``rota.v1.Reservation``) as files: the CSV booking sheet
(``rota.bookingsheet``, which ``greserve import`` reads), the iCalendar file
(``rota.bookingcalendar``), and ``--json``'s objects.
"""

from __future__ import annotations

from typing import Any

from rota.bookingcalendar import write_ics
from rota.bookingsheet import Booking, iso_time, write_sheet


def booking(r: Any) -> Booking:
    """What the booking files keep of ``r`` (a ``rota.v1.Reservation``)."""
    return Booking(
        name=r.name,
        start=r.start,
        end=r.end,
        gpus={g.node: list(g.indices) for g in r.gpus},
        users=list(r.users),
        accounts=list(r.accounts),
        flags=list(r.flags),
        lend=r.lend,
        unused=r.unused or "lend",
        created_at=r.created_at,
    )


def to_csv(reservations: list[Any]) -> str:
    """The booking sheet (``rota.bookingsheet``) of ``reservations``."""
    return write_sheet(map(booking, reservations))


def to_ics(reservations: list[Any], host: str) -> bytes:
    """The iCalendar file (``rota.bookingcalendar``) of ``reservations``."""
    return write_ics(map(booking, reservations), host)


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
