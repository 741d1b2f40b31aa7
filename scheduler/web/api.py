"""The dashboard's JSON API, ``/api/v1/...`` (docs/web.md has every route and object).

Every route but login needs a caller: the session cookie of a login, or an ``Authorization:
Bearer TOKEN`` header (scripts); neither, or a token no longer current, is 401. A change (POST,
DELETE) made with the session cookie must carry the session's CSRF token in ``X-CSRF-Token``
and come from this server's own origin (``Origin``, else ``Sec-Fetch-Site``, else ``Referer``;
a job's web port is another origin: another port of this host, ``rota.scheduler.web.ports``),
else 403; the cookie is ``SameSite=Strict`` as well. No answer carries CORS headers. Reads and
changes call the same engine methods as the gRPC servicers, so the same checks and the same
refusals apply; none of them runs on the event loop (the engine hands them to its core
thread).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from rota.scheduler.cluster.accounting import AccountingQuery
from rota.scheduler.cluster.model import NodeState
from rota.scheduler.cluster.status import NodeStatus
from rota.scheduler.cluster.users import AuditEntry, Principal
from rota.scheduler.core import authz
from rota.scheduler.core.errors import (
    AccessDenied,
    AlreadyExists,
    AuthError,
    Conflict,
    NotFound,
    UserError,
    token_refusal,
)
from rota.scheduler.core.jobs import JobListing
from rota.scheduler.core.node_bookings import NodeBookings
from rota.scheduler.core.nodes import MAX_NODE_PAGE, NodeSummary
from rota.scheduler.core.tokens import hash_token
from rota.scheduler.engine import Engine
from rota.scheduler.http import Request, Response, Route
from rota.scheduler.policy.partitions import PartitionTable
from rota.scheduler.web import views
from rota.scheduler.web.changes import Feeds
from rota.scheduler.web.identity import TokenCheck
from rota.scheduler.web.origin import foreign_login, foreign_origin
from rota.scheduler.web.query import query_int
from rota.scheduler.web.sessions import (
    COOKIE,
    CSRF_HEADER,
    Session,
    Sessions,
    TooManySessions,
    id_hash,
)
from rota.states import parse_state

log = logging.getLogger("rota.scheduler")
JSON = "application/json"
LOG_TAIL = 64 * 1024  # bytes of a job's output the log route returns by default
MAX_LOG_TAIL = 16 << 20  # the most it returns (glogs streams whole outputs)
ENDED_LIMIT = 50  # ended jobs ``state=ended`` lists by default
LOG_TIMEOUT = 15.0  # seconds to wait for a node to send a job's output
SEVERAL_SESSIONS = (
    f"several {COOKIE} cookies came with this request: a page on another port of this host "
    "(a job's web port) set one; clear this site's cookies in the browser and log in again"
)
API_HEADERS = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
)


class ApiError(Exception):
    """Answered as ``{"error": message}`` with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Refused(ApiError):
    """A credential refused (401) or a change without its CSRF token (403): answered as
    ``ApiError`` and recorded in the audit log."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who makes a request and, for a cookie login, its session (None for a bearer
    token)."""

    who: Principal
    session: Session | None


ApiHandler = Callable[[Request, Caller], Awaitable[Response]]


def reply(data: Any, status: int = 200, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    return Response(status, views.encode(data), JSON, API_HEADERS + headers)


def error(status: int, message: str) -> Response:
    return reply({"error": message}, status)


class Api:
    """The routes of ``/api/v1``; ``secure`` marks the cookie Secure (the port serves TLS);
    ``clock`` dates audit entries; ``logged_out`` is told the id hash of a session that logged
    out (its job ports' grants end)."""

    def __init__(
        self,
        engine: Engine,
        tokens: TokenCheck,
        sessions: Sessions,
        secure: bool,
        clock: Callable[[], float],
        logged_out: Callable[[str], None] = lambda _session: None,
    ) -> None:
        self.engine = engine
        self.tokens = tokens
        self.sessions = sessions
        self.secure = secure
        self.clock = clock
        self.logged_out = logged_out
        self.feeds = Feeds()

    def routes(self) -> list[Route]:
        v1 = "/api/v1"
        guarded = (
            ("POST", f"{v1}/logout", self.logout),
            ("GET", f"{v1}/session", self.session),
            ("GET", f"{v1}/nodes", self.nodes),
            ("GET", f"{v1}/jobs", self.jobs),
            ("GET", f"{v1}/jobs/{{id}}", self.job),
            ("GET", f"{v1}/jobs/{{id}}/log", self.log),
        )
        return [Route("POST", f"{v1}/login", self.login)] + [
            self.route(method, pattern, handler) for method, pattern, handler in guarded
        ]

    def route(
        self,
        method: str,
        pattern: str,
        handler: ApiHandler,
        *,
        as_rpc: bool = False,
        same_origin: bool = False,
    ) -> Route:
        """``handler`` at ``method pattern`` behind this API's caller and CSRF checks, its
        refusals audited as ``web METHOD PATTERN``. ``as_rpc``: a route the commands use in
        place of an RPC (``web.commands``), answered as gRPC answers it: a bearer token only,
        refused in gRPC's words, and an admin's submission not audited. A cookie's change
        needs this server's own origin (``origin.foreign_origin``) and the CSRF header;
        ``same_origin``: any of its requests needs this server's own origin, and no CSRF
        header, for what is not the dashboard's own fetch (a WebSocket, a job's web port)."""
        action = f"web {method} {pattern}"
        return Route(method, pattern, self._guard(action, handler, as_rpc, same_origin))

    # ------------------------------------------------------------ authentication

    def _guard(
        self, action: str, handler: ApiHandler, as_rpc: bool = False, same_origin: bool = False
    ) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` behind the caller check, the CSRF check for changes, and the mapping
        of domain errors to statuses. A refusal (401, 403) is recorded in the audit log as
        ``action``, as gRPC's refusals are, and so is an admin's change (a booking, a
        cancellation; not a logout); a request with no credentials at all (a page opened
        before logging in) is not."""
        changes = action.split()[1] not in ("GET", "HEAD") and not action.endswith("/logout")
        changes = changes and not as_rpc

        async def guarded(request: Request) -> Response:
            who: Principal | None = None
            try:
                caller = await self._caller(request, as_rpc)
                who = caller.who
                writes = request.method not in ("GET", "HEAD")
                if (same_origin or writes) and caller.session is not None:
                    foreign = foreign_origin(request, "https" if self.secure else "http")
                    if foreign:
                        raise Refused(403, foreign)
                if writes and not same_origin and caller.session is not None:
                    sent = request.headers.get(CSRF_HEADER, "")
                    if not self.sessions.csrf_ok(caller.session, sent):
                        raise Refused(403, f"missing or wrong {CSRF_HEADER} header")
                response = await handler(request, caller)
                if changes and who.admin and response.status < 400:
                    await self._record(request, action, who, "", "")
                return response
            except Refused as exc:
                await self._record(request, action, who, _code(exc.status), str(exc))
                return error(exc.status, str(exc))
            except ApiError as exc:
                return error(exc.status, str(exc))
            except AuthError as exc:
                await self._record(request, action, None, _code(401), str(exc))
                return error(401, str(exc))
            except AccessDenied as exc:
                await self._record(request, action, who, _code(403), str(exc))
                return error(403, str(exc))
            except UserError as exc:
                return error(400, str(exc))
            except NotFound as exc:
                return error(404, str(exc))
            except (AlreadyExists, Conflict) as exc:
                return error(409, str(exc))

        return guarded

    async def _record(
        self, request: Request, action: str, who: Principal | None, code: str, why: str
    ) -> None:
        """Record a request in the audit log: who (empty without a current token), what,
        which target, from where; a refusal with its ``code`` (``UNAUTHENTICATED``,
        ``PERMISSION_DENIED``) and why, as gRPC's entries read; "" for an allowed change."""
        entry = AuditEntry(
            time=self.clock(),
            user=who.user if who is not None else "",
            action=action,
            target=_target(request),
            peer=request.peer,
            allowed=not code,
            detail=f"{code}: {why}" if code else why,
        )
        try:
            await self.engine.users.record(entry)
        except Exception:
            log.exception("could not record an audit entry: %s", entry)

    async def _caller(self, request: Request, as_rpc: bool = False) -> Caller:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        if token:
            who = await self.tokens(token)
            if who is None:
                why = (
                    token_refusal(token)
                    if as_rpc
                    else "the bearer token is not a current rota token"
                )
                raise Refused(401, why)
            return Caller(who, None)
        if as_rpc:
            raise Refused(401, token_refusal(""))
        session_id = session_cookie(request)
        session = await self.sessions.get(session_id)
        if session is None:
            raise ApiError(401, "log in first (POST /api/v1/login with your rota token)")
        who = await self.tokens.by_hash(session.token_hash)
        if who is None:
            await self.sessions.close(session_id)
            raise Refused(401, "your rota token is no longer current; log in again")
        return Caller(who, session)

    async def login(self, request: Request) -> Response:
        """``{"token": "..."}`` -> the session cookie, and ``{"user", "admin", "csrf"}``.

        Only as ``Content-Type: application/json`` (415 otherwise: a form or ``text/plain``
        post, which another site's page may send without asking, is no login) and, when the
        browser names an ``Origin``, only from this server's own (403): no other site logs a
        browser in under an account of its choosing (login CSRF)."""
        refusal = foreign_login(request, "https" if self.secure else "http")
        if refusal is not None:
            status, why = refusal
            await self._record(request, f"web POST {request.path}", None, _code(status), why)
            return error(status, why)
        try:
            token = str(json.loads(request.body or b"{}").get("token", "")).strip()
        except (ValueError, AttributeError, RecursionError):  # RecursionError: [[[[...
            return error(400, 'body: must be a JSON object {"token": "..."}')
        if not token:
            return error(400, "token: your rota token is required (gadmin user token NAME)")
        who = await self.tokens(token)
        if who is None:
            why = "token: not a current rota token"
            await self._record(request, f"web POST {request.path}", None, _code(401), why)
            return error(401, why)
        try:
            session_id, session = await self.sessions.open(hash_token(token), who.user)
        except TooManySessions as exc:
            return error(503, str(exc))
        cookie = f"{COOKIE}={session_id}; Path=/; HttpOnly; SameSite=Strict"
        if self.secure:
            cookie += "; Secure"
        return reply(self._who(who, session), headers=(("Set-Cookie", cookie),))

    async def logout(self, request: Request, caller: Caller) -> Response:
        session_id = session_cookie(request)
        await self.sessions.close(session_id)
        if session_id:
            self.logged_out(id_hash(session_id))
        expired = f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
        return reply({}, headers=(("Set-Cookie", expired),))

    async def session(self, request: Request, caller: Caller) -> Response:
        """Who is logged in, and the session's CSRF token (a reloaded page asks here)."""
        return reply(self._who(caller.who, caller.session))

    def _who(self, who: Principal, session: Session | None) -> dict[str, Any]:
        """The page's view of who is logged in; ``may_repeat``: whether they may book DAILY
        and WEEKLY (``reservations.users_may_repeat``, or an admin)."""
        may_repeat = who.admin or self.engine.services.config.reservations.users_may_repeat
        return {**_who(who, session), "may_repeat": may_repeat}

    # ------------------------------------------------------------ cluster and queue

    async def nodes(self, request: Request, caller: Caller) -> Response:
        """Every node, and ``summary``: the counts of ``ginfo -s``."""
        shown, table = await self._all_nodes()
        counted = await self.engine.nodes.list_nodes(0, "", False, True)
        active = await self._all_jobs(JobListing(), caller.who)
        users = {j.display_id: j.user for j in active}
        booked = await self.engine.nodes.node_bookings([node.name for node, _status in shown])
        now = time.time()
        holders = views.booked_now(await self.engine.reservations.list_reservations(), now)
        rows = [
            views.node_json(
                node,
                status,
                users,
                *_reserved(booked.get(node.name)),
                partitions=sorted(table.of_node(node.name, node.labels)),
                booked=holders.get(node.name, {}),
            )
            for node, status in shown
        ]
        summary = views.summary_json(counted.summary or NodeSummary())
        return self.listing(
            request, caller, "nodes", rows, _name, {"summary": summary}, views.node_signature
        )

    async def jobs(self, request: Request, caller: Caller) -> Response:
        """``?state=active`` (default: pending and running), ``ended`` (the ``limit``, default
        50, that ended last), ``all``, or a state name or code; ``user=`` one user's jobs."""
        wanted = request.query.get("state", "active").strip()
        user = request.query.get("user", "").strip()
        if wanted == "ended":
            limit = query_int(request.query, "limit", ENDED_LIMIT, minimum=1)
            query = AccountingQuery(users=(user,) if user else (), limit=limit)
            rows = await self.engine.jobs.list_finished(query, caller.who)
            return self.listing(request, caller, "jobs", [views.job_json(r.job) for r in rows])
        if wanted == "active":
            listing = JobListing(users=(user,) if user else ())
        elif wanted == "all":
            listing = JobListing(all_states=True, users=(user,) if user else ())
        else:
            try:
                state = parse_state(wanted)
            except ValueError:
                raise UserError(
                    f"state: {wanted!r} is not active, all, or a job state (PENDING, PD, ...)"
                ) from None
            listing = JobListing(states=(state,), users=(user,) if user else ())
        jobs = await self._all_jobs(listing, caller.who)
        return self.listing(request, caller, "jobs", [views.job_json(j) for j in jobs])

    def listing(
        self,
        request: Request,
        caller: Caller,
        rows_key: str,
        rows: list[views.Json],
        id_of: Callable[[views.Json], str] = lambda row: str(row["id"]),
        extras: dict[str, Any] | None = None,
        signature: Callable[[views.Json], Any] = lambda row: row,
    ) -> Response:
        """A listing of ``rows`` with its ``time``, as a change feed (``Feeds.answer``) of
        this route for this caller."""
        key = (request.path, caller.who.user)
        answer = self.feeds.answer(
            key, request.query, rows_key, rows, id_of, extras or {}, signature
        )
        return reply({"time": views.iso(time.time()), **answer})

    async def _all_nodes(self) -> tuple[list[tuple[NodeState, NodeStatus]], PartitionTable]:
        """Every node with its displayed status, in name order (page by page), and the lab's
        partitions."""
        page = await self.engine.nodes.list_nodes(MAX_NODE_PAGE, "", False, False)
        nodes = list(page.nodes)
        while page.next_page_token:
            page = await self.engine.nodes.list_nodes(
                MAX_NODE_PAGE, page.next_page_token, False, False
            )
            nodes.extend(page.nodes)
        return nodes, page.partitions

    async def _all_jobs(self, listing: JobListing, who: Principal) -> list[Any]:
        page = await self.engine.jobs.list_jobs(listing, who)
        jobs = list(page.jobs)
        while page.next_page_token:
            page = await self.engine.jobs.list_jobs(
                JobListing(
                    listing.states,
                    listing.all_states,
                    listing.ids,
                    listing.users,
                    listing.accounts,
                    page_token=page.next_page_token,
                ),
                who,
            )
            jobs.extend(page.jobs)
        return jobs

    async def job(self, request: Request, caller: Caller) -> Response:
        job, events = await self.engine.jobs.get_job(request.params["id"], caller.who)
        return reply(
            {
                "job": views.job_json(job),
                "events": [views.event_json(e) for e in events],
                "may_read_log": not authz.may_read_logs(caller.who, job),
                "may_act": authz.owns(caller.who, job),
                "image": job.spec.image,
            }
        )

    async def log(self, request: Request, caller: Caller) -> Response:
        """The last ``tail`` bytes (default 64 KiB, at most 16 MiB) of the job's output, as
        text; the owner and admins only."""
        display_id = request.params["id"]
        tail = query_int(request.query, "tail", LOG_TAIL, minimum=1, maximum=MAX_LOG_TAIL)
        attempt = query_int(request.query, "attempt", 0, minimum=0)
        kept = bytearray()
        try:
            async with asyncio.timeout(LOG_TIMEOUT):
                async for chunk in self.engine.jobs.stream_logs(
                    display_id, attempt, False, caller.who
                ):
                    kept += chunk
                    del kept[:-tail]
        except TimeoutError:
            raise ApiError(503, f"the node of job {display_id} did not send its output") from None
        return Response(200, bytes(kept), "text/plain; charset=utf-8", API_HEADERS)


def session_cookie(request: Request) -> str:
    """The session id of the request's ``rota_session`` cookie ("" without one). Refused (401)
    when it carries several different ones: a page on another port of this host (a job's web
    port) may set cookies for the host, a ``rota_session`` for a longer path among them, which
    the browser sends next to the dashboard's own; neither is taken."""
    ids = set(request.cookies(COOKIE))
    if len(ids) > 1:
        raise Refused(401, SEVERAL_SESSIONS)
    return ids.pop() if ids else ""


def _name(row: views.Json) -> str:
    return str(row["name"])


def _target(request: Request) -> str:
    """What a request names, for the audit log: the route's parts (``id=7``), or the ``name``
    of a JSON body (a booking's)."""
    named = dict(request.params)
    if not named and request.body:
        try:
            body = json.loads(request.body)
        except (ValueError, RecursionError):
            body = None
        if isinstance(body, dict) and isinstance(body.get("name"), str):
            named["name"] = body["name"]
    return " ".join(f"{k}={v}" for k, v in sorted(named.items()))[:1024]


def _code(status: int) -> str:
    """The gRPC status name an HTTP refusal is recorded as."""
    return "UNAUTHENTICATED" if status == 401 else "PERMISSION_DENIED"


def _who(who: Principal, session: Session | None) -> dict[str, Any]:
    return {
        "user": who.user,
        "admin": who.admin,
        "accounts": list(who.allowed_accounts),
        "default_account": who.account,
        "csrf": session.csrf if session is not None else "",
    }


def _reserved(bookings: NodeBookings | None) -> tuple[int, frozenset[int]]:
    """GPUs reserved now and those under an open MAINT window."""
    if bookings is None:
        return 0, frozenset()
    return bookings.gpus_now, bookings.gpus_maint
