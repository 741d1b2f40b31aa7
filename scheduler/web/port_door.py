"""A job's web port, asked of the dashboard: ``GET /jobs/{id}/port/{port}/...`` and
``/jobs/{id}/app/{port}/...`` on the HTTP port answer a redirect to the same path on the ports
origin (``web_ports_listen``: another port of this host, so another origin), carrying a
single-use ticket (``rota_ticket``, ``PortGrants``) of the caller for that job and port. The
app itself is served there only (``rota.scheduler.web.ports``), never on the dashboard's
origin, so its pages' scripts cannot call the dashboard's API as whoever views them.

The caller is the dashboard's (login cookie or bearer token), with the owner-or-admin check
of ``authz`` made before the ticket is handed out (403 otherwise, audited); with the cookie,
the request must come from the dashboard's own pages or the address bar (``Origin``,
``Sec-Fetch-Site``, ``Referer``), so a job's page cannot have a viewer's browser fetch
tickets for other jobs; and a request naming none of them (plain HTTP off loopback, where
browsers send no ``Sec-Fetch-Site`` and a page may leave out ``Referer``) must carry the
session's CSRF token as ``rota_csrf`` (the job page's link does; a page elsewhere cannot read
it), which is dropped from the redirect. The redirect goes to the dashboard's host name, or with
``web_ports_domain`` to the job's own host (``jID.DOMAIN``). Without ``web_ports_listen`` the
paths answer 503 naming it.
"""

from __future__ import annotations

import re

from rota.inputs import is_job_id
from rota.scheduler.core.tokens import hash_token
from rota.scheduler.engine import Engine
from rota.scheduler.facade.interactive import ClientOpen
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web.api import Api, ApiError, Caller, Refused, session_cookie
from rota.scheduler.web.job_hosts import host_of
from rota.scheduler.web.port_grants import Door, PortGrants
from rota.scheduler.web.sessions import Sessions, id_hash

TICKET = "rota_ticket"  # the query parameter carrying a ticket to the ports origin
CSRF = "rota_csrf"  # the query parameter of the job page's link: its login's CSRF token
WAYS = ("port", "app")  # the app is asked for the path under the prefix / the whole path
NOT_SERVED = (
    "job web ports are served on their own address, which is not configured: set "
    "web_ports_listen (--web-ports-listen HOST:PORT) in the scheduler's settings, or use "
    "rota forward JOB PORT"
)
UNPROVEN = (
    f"{CSRF}: this request names no origin (no Sec-Fetch-Site, Origin or Referer: plain HTTP "
    "off loopback), so a job's web port opens only from the Web port link of the job's page on "
    "the dashboard (or serve the dashboard over TLS)"
)
_HOST = re.compile(r"[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]")


def door_of(request: Request) -> Door:
    """The job, way and port a ``/jobs/{id}/{way}/{port}...`` request names (ApiError 400
    when the id or port is not one)."""
    job_id, text = request.params["id"], request.params["port"]
    if not is_job_id(job_id):
        raise ApiError(400, f"id: {job_id[:40]!r} is not a job id like 123 or 123_4")
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ApiError(400, f"port: {text[:20]!r} is not a TCP port (1-65535)")
    return Door(job_id, request.path.split("/")[3], int(text))


class PortDoor:
    """The dashboard's routes for job web ports: tickets to the ports origin, on the job's
    own host under ``domain`` (``job_hosts``), or with "" on the dashboard's host."""

    def __init__(self, engine: Engine, grants: PortGrants, secure: bool, domain: str = "") -> None:
        self.domain = domain
        self.engine = engine
        self.grants = grants
        self.scheme = "https" if secure else "http"

    def routes(self, api: Api) -> list[Route]:
        routes = []
        for way in WAYS:
            base = f"/jobs/{{id}}/{way}/{{port}}"
            for pattern in (base, base + "/{rest*}"):
                routes.append(api.route("GET", pattern, self.open, same_origin=True))
        return routes

    async def open(self, request: Request, caller: Caller) -> Response:
        """Check the port and the caller's right to enter the job, then send the browser to
        the ports origin with a ticket."""
        door = door_of(request)
        if not self.grants.port:
            raise ApiError(503, NOT_SERVED)
        host = request.headers.get("host", "").strip()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if not _HOST.fullmatch(name):
            raise ApiError(400, f"Host: {host[:100]!r} is not a host name or address")
        if (
            caller.session is not None
            and not any(h in request.headers for h in ("sec-fetch-site", "origin", "referer"))
            and not Sessions.csrf_ok(caller.session, request.query.get(CSRF, ""))
        ):
            raise Refused(403, UNPROVEN)
        opening = ClientOpen(door.job_id, "forward", port=door.port)
        await self.engine.interactive.may_open(opening, caller.who)
        if caller.session is not None:
            token_hash = caller.session.token_hash
        else:
            token_hash = hash_token(request.headers["authorization"].partition(" ")[2].strip())
        session = id_hash(session_cookie(request)) if caller.session is not None else ""
        ticket = self.grants.ticket(caller.who.user, token_hash, door, session)
        path, _, query = request.target.partition("?")
        if path.rstrip("/").count("/") == 4:  # the port's root: with its slash
            path = path.rstrip("/") + "/"
        ours = (TICKET + "=", CSRF + "=")
        query = "&".join(p for p in query.split("&") if p and not p.startswith(ours))
        query = f"{query}&{TICKET}={ticket}" if query else f"{TICKET}={ticket}"
        if self.domain:
            name = host_of(door.job_id, self.domain)
        where = f"{self.scheme}://{name}:{self.grants.port}{path}?{query}"
        headers = (
            ("Location", where),
            ("Cache-Control", "no-store"),
            ("Referrer-Policy", "no-referrer"),
        )
        return Response(303, b"", headers=headers)
