"""The reservation timeline's routes: bookings over a period, book GPUs, cancel a booking, and
the bookings as the CSV sheet ``greserve import`` reads (``rota.bookingsheet``, the writer of
``greserve export --csv``).

Booking and cancelling go through the engine's reservation service exactly as ``greserve
create`` and ``greserve delete`` do: the same validation, rights, caps, conflict checks and
refusal text. The timeline adds only picking GPUs by hand: the GPUs selected are booked as
given (``ReservationRequest.gpu_ids``), a node named with no indices is booked whole. A booking
is for its maker unless an admin names other users.
"""

from __future__ import annotations

import json
import time
from typing import Any

from rota.bookingsheet import Booking, write_sheet
from rota.scheduler.cluster.reservation import LEND, Reservation
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.reservations import ReservationRequest
from rota.scheduler.engine import Engine
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web import views
from rota.scheduler.web.api import API_HEADERS, Api, Caller, reply
from rota.scheduler.web.query import parse_time

UPDATABLE = ("start", "end", "users", "accounts", "flags")  # what PATCH may change
CSV = "text/csv; charset=utf-8"
MAX_DAYS = 400  # the longest period a listing expands recurring bookings' windows over


class Bookings:
    """``GET/POST /api/v1/reservations``, ``GET/PATCH/DELETE /api/v1/reservations/{name}``,
    ``GET /api/v1/reservations.csv``."""

    def __init__(self, engine: Engine, api: Api) -> None:
        self.engine = engine
        self.api = api

    def routes(self) -> list[Route]:
        """The routes, behind the API's caller and CSRF checks (its change feed lists)."""
        v1 = "/api/v1/reservations"
        return [
            self.api.route("GET", v1, self.list),
            self.api.route("POST", v1, self.create),
            self.api.route("GET", v1 + ".csv", self.sheet),
            self.api.route("GET", v1 + "/{name}", self.show),
            self.api.route("PATCH", v1 + "/{name}", self.update),
            self.api.route("DELETE", v1 + "/{name}", self.delete),
        ]

    async def list(self, request: Request, caller: Caller) -> Response:
        """Open and upcoming reservations with a window in ``start``..``end`` (default: all),
        each with its windows there; a period of at most ``MAX_DAYS`` (a DAILY booking has a
        window per day of it, built on the event loop)."""
        query = request.query
        start = parse_time(query["start"], "start") if query.get("start") else time.time()
        end = parse_time(query["end"], "end") if query.get("end") else 0.0
        if end and end < start:
            raise UserError("end: must not be before start")
        if end and end - start > MAX_DAYS * 86400.0:
            raise UserError(f"end: the period may span at most {MAX_DAYS} days from start")
        shown = []
        for r, running in await self.engine.reservations.list_reservations():
            windows = r.windows(start, end) if end else [(r.start, r.end)]
            if windows:
                shown.append(views.reservation_json(r, running, windows, caller.who))
        return self.api.listing(
            request, caller, "reservations", shown, lambda row: str(row["name"])
        )

    async def sheet(self, request: Request, caller: Caller) -> Response:
        """Every open and upcoming booking as the CSV sheet ``greserve import`` reads back,
        the file ``greserve export --csv`` writes (the same listing and writer)."""
        listed = await self.engine.reservations.list_reservations()
        text = write_sheet(booking_record(r) for r, _running in listed)
        saved = (("Content-Disposition", 'attachment; filename="bookings.csv"'),)
        return Response(200, text.encode(), CSV, API_HEADERS + saved)

    async def show(self, request: Request, caller: Caller) -> Response:
        """One booking (open or upcoming) with ``usage``: its current window's GPU-hours so
        far, booked, used by its owners, lent, idle and released (``greserve show``)."""
        name = request.params["name"]
        r, running = await self.engine.reservations.get_reservation(name)
        usage = await self.engine.reservations.reservation_usage(name)
        shown = views.reservation_json(r, running, [(r.start, r.end)], caller.who)
        return reply(shown | {"usage": views.usage_json(usage)})

    async def create(self, request: Request, caller: Caller) -> Response:
        """Book (201 with the reservation); refusals as ``greserve create``'s."""
        booking = booking_request(_object(request.body), caller.who)
        r = await self.engine.reservations.create_reservation(booking, caller.who)
        return reply(views.reservation_json(r, (), [(r.start, r.end)], caller.who), 201)

    async def update(self, request: Request, caller: Caller) -> Response:
        """Change a booking's ``start``, ``end``, ``users``, ``accounts`` or ``flags`` (those
        the body names) as ``greserve update`` does: its maker or an admin, the same checks
        (conflicts, caps, rights); answers the reservation."""
        body = _object(request.body)
        given = [f for f in UPDATABLE if f in body]
        unknown = sorted(set(body) - set(UPDATABLE))
        if unknown:
            raise UserError(
                f"{unknown[0]}: cannot be updated here; updatable: {', '.join(UPDATABLE)}"
            )
        request_ = ReservationRequest(
            name=request.params["name"],
            start=parse_time(_text(body, "start"), "start") if "start" in body else 0.0,
            end=parse_time(_text(body, "end"), "end") if "end" in body else 0.0,
            users=_names(body, "users"),
            accounts=_names(body, "accounts"),
            flags=_names(body, "flags"),
        )
        name = request.params["name"]
        r = await self.engine.reservations.update_reservation(name, request_, given, caller.who)
        return reply(views.reservation_json(r, (), [(r.start, r.end)], caller.who))

    async def delete(self, request: Request, caller: Caller) -> Response:
        """Cancel a booking: its maker or an admin (403 otherwise), none of its jobs running."""
        await self.engine.reservations.delete_reservation(request.params["name"], caller.who)
        return reply({})


def booking_record(r: Reservation) -> Booking:
    """What the booking files (CSV sheet, iCalendar) keep of ``r``."""
    return Booking(
        r.name, r.start, r.end, r.gpus, r.users, r.accounts, r.flags, r.lend, r.unused, r.created_at
    )


def booking_request(body: dict[str, Any], who: Principal) -> ReservationRequest:
    """The request a timeline booking makes (see docs/web.md); fields are checked here for
    their JSON types, the rest by the reservation service."""
    gpus = body.get("gpus", {})
    if not isinstance(gpus, dict) or not gpus:
        raise UserError('gpus: pick GPUs as {"node": [index, ...]} ([] for the whole node)')
    whole: list[str] = []
    exact: dict[str, tuple[int, ...]] = {}
    for node, indices in gpus.items():
        if not isinstance(indices, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in indices
        ):
            raise UserError(f"gpus: {node}: must be a list of GPU indices (>= 0)")
        if indices:
            exact[str(node)] = tuple(sorted(set(indices)))
        else:
            whole.append(str(node))
    if whole and exact:
        raise UserError("gpus: pick GPUs by index on every node, or whole nodes only")
    return ReservationRequest(
        name=_text(body, "name"),
        start=parse_time(_text(body, "start"), "start"),
        end=parse_time(_text(body, "end"), "end"),
        nodes=tuple(whole),
        gpu_ids=exact,
        users=_names(body, "users") or (() if _names(body, "accounts") else (who.user,)),
        accounts=_names(body, "accounts"),
        flags=_names(body, "flags"),
        lend=body.get("lend", True) is not False,
        unused=_text(body, "unused") if "unused" in body else LEND,
    )


def _object(body: bytes) -> dict[str, Any]:
    try:
        found = json.loads(body or b"{}")
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        found = None
    if not isinstance(found, dict):
        raise UserError("body: must be a JSON object (see docs/web.md)")
    return found


def _text(body: dict[str, Any], name: str) -> str:
    value = body.get(name, "")
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{name}: required, a string")
    return value.strip()


def _names(body: dict[str, Any], name: str) -> tuple[str, ...]:
    value = body.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{name}: must be a list of names")
    return tuple(v.strip() for v in value if v.strip())
