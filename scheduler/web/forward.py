"""``rota forward``'s and ``rota proxy``'s raw data path on the HTTP port (docs/interactive.md,
"The raw data path").

``GET /api/v1/jobs/{id}/forward/{port}?node=N`` with ``Connection: Upgrade``, ``Upgrade:
rota-tcp`` and the user's bearer token opens a forward to TCP ``port`` of the running job's
container (``ForwardFacade``: the same checks, rights and records as the gRPC forward; a
refusal is answered before the switch, 403 ones audited). The answer is ``101`` and the
connection then carries the port's bytes both ways until either side closes. An open forward
holds one of its user's slots (``UserSlots``, shared with the terminals) from the moment it
is asked for, so that a burst of requests cannot have the node dial back more data
connections than the user may hold: 503 beyond them.

``GET /api/v1/forward-dial`` with the same upgrade and a ``Rota-Dial-Ticket`` header is the
node's agent dialling the forward's data connection back; a ticket that was never issued, was
claimed already or expired is refused (403) and logged.
"""

from __future__ import annotations

import asyncio
import logging

from rota.inputs import SpecError
from rota.scheduler.engine import Engine
from rota.scheduler.facade.interactive import ClientOpen
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web.api import Api, ApiError, Caller, error
from rota.scheduler.web.slots import UserSlots

log = logging.getLogger("rota.scheduler")

UPGRADE = "rota-tcp"
TICKET_HEADER = "rota-dial-ticket"


class RawForwards:
    """The forward and dial routes; ``slots`` bounds the forwards (and terminals) one user
    holds open."""

    def __init__(self, engine: Engine, slots: UserSlots) -> None:
        self.engine = engine
        self.slots = slots

    def routes(self, api: Api) -> list[Route]:
        return [
            api.route("GET", "/api/v1/jobs/{id}/forward/{port}", self.forward, same_origin=True),
            Route("GET", "/api/v1/forward-dial", self.dial),
        ]

    async def forward(self, request: Request, caller: Caller) -> Response:
        """Open the forward; answer 101 and hand the connection to it."""
        refusal = _upgrade_refusal(request)
        if refusal:
            raise ApiError(400, refusal)
        text = request.params["port"]
        if not text.isdigit() or not 1 <= int(text) <= 65535:
            raise ApiError(400, f"port: {text[:20]!r} is not a TCP port (1-65535)")
        opening = ClientOpen(
            request.params["id"], "forward", port=int(text), node=request.query.get("node", "")
        )
        user = caller.who.user
        self.slots.take(user)  # before anything is recorded or asked: openings count too
        try:
            opened = await self.engine.forwards.open(opening, caller.who, request.peer)
        except BaseException as exc:  # refused, or the node could not open the port
            self.slots.give(user)
            if isinstance(exc, SpecError):
                raise ApiError(400, str(exc)) from None
            raise

        async def takeover(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await opened.serve(reader, writer)
            finally:
                self.slots.give(user)

        def refused() -> None:  # the port has no connection to lend: the slot goes back
            self.slots.give(user)
            opened.drop()

        return Response(101, b"", takeover=takeover, refused=refused)

    async def dial(self, request: Request) -> Response:
        """An agent's data connection: paired with its forward when its ticket is good."""
        refusal = _upgrade_refusal(request)
        if refusal:
            return error(400, refusal)
        serve = self.engine.forwards.claim(request.headers.get(TICKET_HEADER, ""))
        if serve is None:
            log.warning("refused a forward data connection from %s: bad ticket", request.peer)
            return error(403, "unknown, used or expired dial ticket")
        return Response(101, b"", takeover=serve)


def _upgrade_refusal(request: Request) -> str:
    """Why ``request`` asks for no switch to raw bytes ("" when it does)."""
    if request.headers.get("upgrade", "").strip().lower() != UPGRADE:
        return f"Upgrade: {UPGRADE} is required"
    if "upgrade" not in request.headers.get("connection", "").lower():
        return "Connection: Upgrade is required"
    return ""
