"""A job's web port on its own origin (``web_ports_listen``: another port of the
scheduler's host, so another origin than the dashboard's): ``/jobs/{id}/port/{port}/PATH?QUERY``
is answered by whatever listens on TCP ``port`` inside the running job's container (Jupyter,
TensorBoard, an httpd), asked for ``/PATH?QUERY``; ``/jobs/{id}/app/{port}/PATH?QUERY`` is asked
for that whole path, for an app told it as its base (Jupyter's ``--ServerApp.base_url``). This
origin serves nothing else: no dashboard, no API.

A browser comes here from the dashboard (``port_door``) with a ticket in ``rota_ticket``; the
ticket is exchanged for a grant (``PortGrants``), whose id is this origin's cookie
``rota_port`` (``HttpOnly``, ``SameSite=Lax``, ``Path`` the job's prefix), and the browser is
sent on to the same URL without the ticket. A refused ticket (unknown, used, expired, of
another port) is 403 and audited; a request without a live grant for its prefix is 401, one
with several ``rota_port`` cookies 400, and one from another page than the job's own (a fetch
or frame; ``job_hosts.foreign_use``) 403. The dashboard's session cookie and bearer tokens are
never accepted here. With ``web_ports_domain`` each job has its own host (``job_hosts``), and
a request whose ``Host`` is not its job's is 421.

Each request is the engine's interactive session of kind ``forward``, as ``rota forward`` opens
one per connection, as the grant's user (whose token must still be current): the same rights
(``authz``: the job's owner or an admin; 403 otherwise, and audited) and the same record
(``port forward by USER on NODE`` in the job's events, ``Interact/forward`` in the audit log).
The request goes on with ``Connection: close`` and without rota's cookies (``rota_session``,
``rota_port``), and the answer comes back as the app wrote it, less any ``Set-Cookie`` of
those, its cookies host-only (no ``Domain``). A WebSocket upgrade passes through, both ways,
until either side closes. Request bodies are bounded as the HTTP port bounds them (64 KiB).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncGenerator, Awaitable, Callable

from rota.inputs import SpecError
from rota.messages import SessionInput, SessionOutput
from rota.scheduler.cluster.users import AuditEntry, Principal
from rota.scheduler.core.errors import AccessDenied, NotFound, UserError
from rota.scheduler.engine import Engine
from rota.scheduler.facade.interactive import ClientOpen, SessionEvent, Waiting
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.web.api import ApiError, error
from rota.scheduler.web.identity import TokenCheck
from rota.scheduler.web.job_hosts import foreign_use, misdirected
from rota.scheduler.web.port_door import TICKET, WAYS, door_of
from rota.scheduler.web.port_grants import Door, PortGrants
from rota.scheduler.web.sessions import COOKIE
from rota.scheduler.web.slots import UserSlots

log = logging.getLogger("rota.scheduler")
PORT_COOKIE = "rota_port"
OURS = (COOKIE, PORT_COOKIE)  # cookies the app never sees nor sets
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
HOP_BY_HOP = frozenset(
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "transfer-encoding",
        "proxy-authorization",
        "content-length",
    ]
)
MAX_HEAD = 64 * 1024  # bytes of the app's answer's head; a longer one is answered 502
SNIFF = 8  # bytes of an answer looked at for "HTTP" (``_is_http``)
CHUNK = 64 * 1024  # bytes read from the browser at once (an upgraded connection)
_OURS = tuple(name.encode() for name in OURS)
# Clear-Site-Data would clear the dashboard's cookies (a page could then set its own);
# Service-Worker-Allowed would let a job's service worker control every job's paths
_DROPPED = (b"clear-site-data", b"service-worker-allowed")
_STATUS = re.compile(rb"HTTP/1\.[01] ([1-5][0-9][0-9])(?: .*)?")
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a header's name
SEVERAL = (
    f"several {PORT_COOKIE} cookies: a page set one of its own next to this browser's grant; "
    "clear this site's cookies and open the port again from the job's page on the dashboard"
)
NO_GRANT = (
    "this browser has no access to this job's port here: open it from the job's page on the "
    "dashboard (a link to it gets a fresh ticket)"
)


class WebPorts:
    """The ports origin's routes; ``secure``: it serves TLS (its cookie is marked Secure);
    ``clock`` dates audit entries; ``slots`` bounds the requests one user has open;
    ``domain``: each job's ports are served on their own host under it (``job_hosts``), ""
    for one shared origin."""

    def __init__(
        self,
        engine: Engine,
        tokens: TokenCheck,
        grants: PortGrants,
        secure: bool,
        clock: Callable[[], float],
        slots: UserSlots,
        domain: str = "",
    ) -> None:
        self.domain = domain
        self.engine = engine
        self.tokens = tokens
        self.grants = grants
        self.secure = secure
        self.clock = clock
        self.slots = slots

    def routes(self) -> list[Route]:
        routes = []
        for way in WAYS:
            base = f"/jobs/{{id}}/{way}/{{port}}"
            routes.append(Route("GET", base, self._guarded("", self.slash)))
            for method in METHODS:
                action = f"web {method} {base}/{{rest*}}"
                routes.append(Route(method, base + "/{rest*}", self._guarded(action)))
        return routes

    async def slash(self, request: Request, _action: str) -> Response:
        """The port's root with its slash, so relative links resolve under it (and the
        grant's cookie, whose path ends with one, is sent)."""
        self._on_its_host(request)
        return Response(303, b"", headers=(("Location", request.path + "/"),))

    def _guarded(
        self, action: str, serve: Callable[[Request, str], Awaitable[Response]] | None = None
    ) -> Callable[[Request], Awaitable[Response]]:
        """``serve`` (default ``self.serve``) with its refusals answered (``serve`` audits a
        refused ticket or right as ``action``)."""
        serving = serve or self.serve

        async def guarded(request: Request) -> Response:
            try:
                return await serving(request, action)
            except ApiError as exc:
                return error(exc.status, str(exc))
            except (UserError, SpecError) as exc:
                return error(400, str(exc))
            except NotFound as exc:
                return error(404, str(exc))

        return guarded

    async def serve(self, request: Request, action: str) -> Response:
        """A ticket exchanged for a grant, or a request under a grant relayed to the app; on
        the job's own host only (with ``domain``), from its own pages or a navigation."""
        door = self._on_its_host(request)
        foreign = foreign_use(request)
        if foreign:
            raise ApiError(403, foreign)
        ticket = request.query.get(TICKET)
        if ticket is not None:
            return await self._exchange(request, action, door, ticket)
        grant_ids = request.cookies(PORT_COOKIE)
        if len(grant_ids) > 1:
            raise ApiError(400, SEVERAL)
        grant = self.grants.grant(grant_ids, door)
        if grant is None:
            raise ApiError(401, NO_GRANT)
        who = await self.tokens.by_hash(grant.token_hash)
        if who is None or who.user != grant.user:
            raise ApiError(401, f"{grant.user}'s rota token is no longer current; {NO_GRANT}")
        try:
            return await self.proxy(request, who, door)
        except AccessDenied as exc:
            await self._record(request, action, str(exc), who.user)
            raise ApiError(403, str(exc)) from None

    def _on_its_host(self, request: Request) -> Door:
        """The door ``request`` names; with ``domain``, ApiError 421 unless its ``Host`` is
        that job's own."""
        door = door_of(request)
        if self.domain and (why := misdirected(request, door.job_id, self.domain)):
            raise ApiError(421, why)
        return door

    async def _exchange(self, request: Request, action: str, door: Door, ticket: str) -> Response:
        """The grant's cookie for a current ticket of ``door``, and the URL without it."""
        redeemed = self.grants.redeem(ticket, door) if request.method == "GET" else None
        if redeemed is None:
            why = (
                f"{TICKET}: not a current ticket for {door.prefix} (a ticket opens one job's "
                "port, once, for 30 seconds): open the port again from the job's page on the "
                "dashboard"
            )
            await self._record(request, action, why)
            raise ApiError(403, why)
        grant_id, _grant = redeemed
        cookie = f"{PORT_COOKIE}={grant_id}; Path={door.prefix}; HttpOnly; SameSite=Lax"
        if self.secure:
            cookie += "; Secure"
        path, _, query = request.target.partition("?")
        rest = "&".join(p for p in query.split("&") if p and not p.startswith(TICKET + "="))
        headers = (
            ("Set-Cookie", cookie),
            ("Location", f"{path}?{rest}" if rest else path),
            ("Cache-Control", "no-store"),
            ("Referrer-Policy", "no-referrer"),
        )
        return Response(303, b"", headers=headers)

    async def _record(self, request: Request, action: str, why: str, user: str = "") -> None:
        """A refusal (403) in the audit log, as the dashboard's refusals are recorded."""
        target = " ".join(f"{k}={v}" for k, v in sorted(request.params.items()))[:1024]
        entry = AuditEntry(
            time=self.clock(),
            user=user,
            action=action,
            target=target,
            peer=request.peer,
            allowed=False,
            detail=f"PERMISSION_DENIED: {why}",
        )
        try:
            await self.engine.users.record(entry)
        except Exception:
            log.exception("could not record an audit entry: %s", entry)

    async def proxy(self, request: Request, who: Principal, door: Door) -> Response:
        """Enter the job as ``who`` (the rights are checked there), then hand the connection
        to the relay (``_Exchange``)."""
        exchange = _Exchange(_head(request, door.way == "app"))
        opening = ClientOpen(door.job_id, "forward", port=door.port)
        events = self.slots.held(
            who.user,
            self.engine.interactive.interact(opening, exchange.inputs(), who, request.peer),
        )
        try:
            first = await anext(events)  # the rights and the job's state are checked here
        except StopAsyncIteration:
            raise ApiError(502, "the job's port gave no answer") from None
        if isinstance(first, SessionOutput):
            await events.aclose()
            raise ApiError(409, first.error or "the job's port gave no answer")
        if isinstance(first, Waiting):
            await events.aclose()
            raise ApiError(409, f"job {opening.job_id} is not running yet")

        async def takeover(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await exchange.serve(reader, writer, events)

        return Response(200, b"", takeover=takeover)


def _head(request: Request, whole: bool) -> bytes:
    """The request as the app gets it: its path under ``/jobs/ID/port/PORT`` (``whole``: its
    whole path), its own headers (not rota's cookies) and its body."""
    target = request.target if whole else "/" + "/".join(request.target.split("/")[5:])
    upgrade = "websocket" in request.headers.get("upgrade", "").lower()
    lines = [f"{request.method} {target} HTTP/1.1"]
    for name, value in request.headers.items():
        if name in HOP_BY_HOP:
            continue
        if name == "cookie":
            value = "; ".join(
                c.strip() for c in value.split(";") if c.strip().partition("=")[0] not in OURS
            )
            if not value:
                continue
        lines.append(f"{name}: {value}")
    if upgrade:
        lines += ["connection: Upgrade", "upgrade: websocket"]
    else:
        lines.append("connection: close")
    if request.body or request.method in ("POST", "PUT", "PATCH"):
        lines.append(f"content-length: {len(request.body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + request.body


class _Exchange:
    """One proxied request: its bytes to the app, the app's answer to the browser."""

    def __init__(self, head: bytes) -> None:
        self.head = head
        self.upgrade = b"\r\nupgrade: websocket\r\n" in head
        self.reader: asyncio.StreamReader | None = None
        self.gone = asyncio.Event()

    async def inputs(self) -> AsyncGenerator[SessionInput, None]:
        """The request; for an upgrade, then whatever the browser sends until it closes."""
        yield SessionInput(0, data=self.head)
        if not self.upgrade or self.reader is None:
            await self.gone.wait()  # the app's answer ends the session
            return
        while data := await self.reader.read(CHUNK):
            yield SessionInput(0, data=data)
        self.gone.set()

    async def serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        events: AsyncGenerator[SessionEvent, None],
    ) -> None:
        """Relay the answer until the app or (an upgraded) browser closes."""
        self.reader = reader
        relay = asyncio.create_task(self._answer(writer, events))
        gone = asyncio.create_task(self.gone.wait())
        try:
            await asyncio.wait((relay, gone), return_when=asyncio.FIRST_COMPLETED)
            answered = relay.done() and not relay.cancelled() and relay.exception() is None
            if answered and not relay.result():
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        finally:
            self.gone.set()
            for task in (relay, gone):
                task.cancel()
            await asyncio.gather(relay, gone, return_exceptions=True)
            await events.aclose()
            await writer.drain()

    async def _answer(
        self, writer: asyncio.StreamWriter, events: AsyncGenerator[SessionEvent, None]
    ) -> bool:
        """Write the app's answer, its head checked and filtered (``_filtered``); whether it
        wrote any (not when the app closed before its head ended, or sent one that is too
        long or refused). An answer a browser reads no head of passes as it came."""
        head, body_started = b"", False
        async for event in events:
            if not isinstance(event, SessionOutput) or not event.data:
                continue
            if body_started:
                writer.write(event.data)
                await writer.drain()
                continue
            head += event.data
            if len(head) < SNIFF:
                continue
            kept: bytes | None = b""
            end = _end_of_head(head) if _is_http(head) else 0  # 0: no head (a raw stream)
            if end < 0 and len(head) <= MAX_HEAD:
                continue
            if end:
                kept = _filtered(head[:end]) if 0 < end <= MAX_HEAD else None
            if kept is None:
                return False
            writer.write(kept + head[end:])
            await writer.drain()
            body_started = True
        if head and not body_started and not _is_http(head):
            writer.write(head)  # a few bytes, no HTTP answer: nothing a browser takes a head of
            return True
        return body_started


def _is_http(data: bytes) -> bool:
    """Whether a browser reads an answer starting with ``data`` as an HTTP/1 answer with
    headers: it looks for ``HTTP`` (any case) in its first bytes (Chromium: at offsets 0 to 4);
    an answer without it is relayed as it came (a raw stream through an upgrade)."""
    return b"http" in data[:SNIFF].lower()


def _end_of_head(data: bytes) -> int:
    """Where the body of an answer starting with ``data`` begins: after its first empty line
    (browsers end lines at a bare LF too); -1 before that line came."""
    ends = [at + len(blank) for blank in (b"\n\r\n", b"\n\n") if (at := data.find(blank)) >= 0]
    return min(ends, default=-1)


def _filtered(head: bytes) -> bytes | None:
    """The app's answer head as the browser gets it: its lines ended by CRLF, less any
    ``Set-Cookie`` of rota's cookies or of a cookie without a name (a browser sends such a
    cookie as its bare value, which may read ``rota_session=...``), less ``Clear-Site-Data``
    and ``Service-Worker-Allowed`` (``_DROPPED``: a job's service worker stays under the
    job's prefix, never seeing another job's pages, tickets or tokens). None
    (the answer is refused) for a head a browser could read otherwise than this: a bare CR,
    a NUL, a folded line, a header line without a name, or an informational status other than
    101 (another head would follow, read as the body here)."""
    lines = [line.removesuffix(b"\r") for line in head.split(b"\n")][:-2]
    if not lines or any(b"\r" in line or b"\0" in line for line in lines):
        return None
    status = _STATUS.fullmatch(lines[0])
    if status is None or (status[1].startswith(b"1") and status[1] != b"101"):
        return None
    kept = [lines[0]]
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            return None
        name = name.lower()
        if name in _DROPPED:
            continue
        if name == b"set-cookie":
            cookie, named, _ = value.split(b";")[0].partition(b"=")
            cookie = cookie.strip(b" \t").lower()
            if not named or not cookie or cookie in _OURS:
                continue
            line = _host_only(line)
        kept.append(line)
    return b"\r\n".join(kept) + b"\r\n\r\n"


def _host_only(line: bytes) -> bytes:
    """A ``Set-Cookie`` line without its ``Domain`` attributes (as a browser reads them: any
    case, spaces or tabs around the name), so the cookie stays on the host that answered and
    never covers a sibling job's host or the dashboard's."""
    name, _, value = line.partition(b":")
    parts = value.split(b";")
    kept = [parts[0]] + [
        p for p in parts[1:] if p.partition(b"=")[0].strip(b" \t").lower() != b"domain"
    ]
    return line if len(kept) == len(parts) else name + b":" + b";".join(kept)
