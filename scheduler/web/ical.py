"""A user's bookings as an iCalendar feed that calendar programs subscribe to.

Calendar programs send no cookie and no bearer token, so the feed's address carries its own
read-only key: ``/api/v1/ical/USER/KEY.ics``, where KEY is an HMAC of the user's current token
hash. The key reads that user's bookings and nothing else; a new token (``gadmin user token``)
changes it, and a revoked user's feed is gone. The logged-in user gets their address from
``GET /api/v1/ical``. Events are those of ``greserve export --ics`` (the same writer,
``rota.bookingcalendar``): one per booking the user made or may use (as a user or an account
member), DAILY and WEEKLY ones recurring.
"""

from __future__ import annotations

import hashlib
import hmac
import socket

from rota.bookingcalendar import write_ics
from rota.scheduler.cluster.users import Principal, UserRecord
from rota.scheduler.core.errors import NotFound
from rota.scheduler.engine import Engine
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web.api import API_HEADERS, Api, Caller, error, reply
from rota.scheduler.web.bookings import booking_record

FEED = "/api/v1/ical"
ICS = "text/calendar; charset=utf-8"


def feed_key(user: UserRecord) -> str:
    """The read-only key of ``user``'s feed ("" when they have no current token)."""
    if not user.token_hash or user.revoked:
        return ""
    mac = hmac.new(user.token_hash.encode(), f"rota ical feed {user.name}".encode(), hashlib.sha256)
    return mac.hexdigest()[:32]


class IcalFeed:
    """``GET /api/v1/ical`` (the caller's feed address) and ``GET /api/v1/ical/{user}/{key}``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def routes(self, api: Api) -> list[Route]:
        return [
            api.route("GET", FEED, self.address),
            Route("GET", FEED + "/{user}/{key}", self.feed),
        ]

    async def address(self, request: Request, caller: Caller) -> Response:
        """``{"path": "/api/v1/ical/USER/KEY.ics"}`` for the caller (a bearer token or a login)."""
        record = await self.engine.users.who_am_i(caller.who)
        key = feed_key(record)
        return reply({"path": f"{FEED}/{record.name}/{key}.ics" if key else ""})

    async def feed(self, request: Request) -> Response:
        """The calendar, or 404 for a user or key that is not current (no hint which)."""
        name, key = request.params["user"], request.params["key"].removesuffix(".ics")
        try:
            record = await self.engine.users.who_am_i(Principal(name))
        except NotFound:
            record = None
        expected = feed_key(record) if record is not None else ""
        if record is None or not expected or not hmac.compare_digest(expected, key):
            return error(404, "no such calendar feed")
        listed = await self.engine.reservations.list_reservations()
        accounts = set(record.accounts or (record.name,))
        mine = [
            r
            for r, _running in listed
            if r.created_by == name or name in r.users or accounts & set(r.accounts)
        ]
        calendar = write_ics(map(booking_record, mine), socket.gethostname())
        return Response(200, calendar, ICS, API_HEADERS)
