"""Attacks on jobs' web ports and the dashboard they share a host with, without a browser or
a job: the app's answer heads a browser would read a ``Set-Cookie`` of rota's cookies from
(bare LF, tab, interim answers, folded lines, bare CR, nameless cookies) are filtered or
refused; a login whose request carries several ``rota_session`` cookies (one planted by a
job's page for a longer path, sent next to the dashboard's own) is taken as nobody's; one
user's thousands of tickets and grants leave everyone else's; and one user's open terminals
and port requests are bounded (tests/test_e2e_web_port_attacks.py has the browser)."""

from __future__ import annotations

import asyncio
import http.client
import socket
from collections.abc import AsyncGenerator, Callable
from pathlib import Path

import pytest

from rota.messages import SessionOutput
from rota.scheduler.http import HttpServer
from rota.scheduler.web.api import ApiError
from rota.scheduler.web.dashboard import dashboard_routes
from rota.scheduler.web.identity import EngineTokens
from rota.scheduler.web.port_grants import (
    MAX_GRANTS,
    MAX_TICKETS,
    MAX_USER_GRANTS,
    MAX_USER_TICKETS,
    Door,
    PortGrants,
)
from rota.scheduler.web.ports import _Exchange
from rota.scheduler.web.slots import UserSlots
from rota.scheduler.web.terminal import _Session
from rota.scheduler.web.websocket import BINARY, TEXT, Closed
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler
from tests.support.tokens import aio_channel
from tests.test_web_api import Browserless, refusals, registered, run, user

PAGE = b"<p>page</p>"


class _Writer:
    """What the relay writes to the browser."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    async def drain(self) -> None:
        return None


def relayed(*chunks: bytes) -> bytes:
    """What the browser gets when the app answers with ``chunks``."""

    async def events() -> AsyncGenerator[SessionOutput, None]:
        for chunk in chunks:
            yield SessionOutput(0, data=chunk)

    async def main() -> bytes:
        writer = _Writer()
        wrote = await _Exchange(b"")._answer(writer, events())  # type: ignore[arg-type]
        return writer.data if wrote else b"502"

    return asyncio.run(main())


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\nSet-Cookie: rota_session=bob; Path=/\n\n",
        b"HTTP/1.1 200 OK\r\nSet-Cookie:\trota_session=bob; Path=/\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nSet-Cookie: rota_session\t=bob; Path=/\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nSET-COOKIE: ROTA_PORT=bob; Path=/jobs/1/port/80/\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nSet-Cookie: =rota_session=bob; Path=/\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nSet-Cookie: rota_session\r\n\r\n",
        b'HTTP/1.1 200 OK\r\nClear-Site-Data: "cookies"\r\n\r\n',
        b"HTTP/1.1 200 OK\r\nService-Worker-Allowed: /\r\nSet-Cookie: rota_port=x\r\n\r\n",
    ],
)
def test_rotas_cookies_and_clear_site_data_never_reach_the_browser(answer: bytes) -> None:
    whole = answer + PAGE
    for chunks in ((whole,), tuple(whole[i : i + 7] for i in range(0, len(whole), 7))):
        out = relayed(*chunks)
        assert out.startswith(b"HTTP/1.1 200 OK\r\n") and out.endswith(b"\r\n\r\n" + PAGE)
        assert b"rota" not in out.lower() and b"-site-" not in out.lower(), out
        assert b"service-worker" not in out.lower(), out


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: rota_session=b\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-A: 1\rSet-Cookie: rota_session=bob\r\n\r\n",  # a bare CR
        b"HTTP/1.1 200 OK\r\nX-A: 1\r\n\tSet-Cookie: rota_session=bob\r\n\r\n",  # folded
        b"HTTP/1.1 200 OK\r\n: rota_session=bob\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-A\x00: 1\r\n\r\n",
        b"xHTTP/1.1 200 OK\r\nSet-Cookie: rota_session=bob\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * 70_000 + b"\r\nSet-Cookie: a=b\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nSet-Cookie: a=b\r\n",  # the app closed before its head ended
    ],
)
def test_heads_a_browser_could_read_otherwise_are_refused(answer: bytes) -> None:
    assert relayed(answer + PAGE if answer.endswith(b"\r\n\r\n") else answer) == b"502"


def test_other_answers_pass_as_the_app_wrote_them() -> None:
    mine = b"HTTP/1.1 200 OK\r\nSet-Cookie: _xsrf=1; Path=/jobs/1/app/8888/\r\n\r\n" + PAGE
    assert relayed(mine) == mine
    upgraded = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi"
    assert relayed(upgraded) == upgraded
    raw = b"GET /ws HTTP/1.1\r\n\r\nboth ways"  # no HTTP answer at all: a raw stream
    assert relayed(raw[:5], raw[5:]) == raw
    assert relayed(b"hi") == b"hi"


def test_several_session_cookies_are_nobodys_login(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        ann, bob = client(), client()
        await ann.login(await user(sched, "ann"))
        await bob.login(await user(sched, "bob"))
        planted = client()
        # a job's page set bob's session for /api (sent first) and a cookie Python's own
        # parser stops at, next to ann's own session
        planted.cookie = f"{bob.cookie}; z=a\\b; {ann.cookie}"
        for web in (planted, client()):
            if web is not planted:
                web.cookie = f"{ann.cookie}; theme=dark; {bob.cookie}"
            reply = await web.call("GET", "/api/v1/session")
            assert reply.status == 401, reply.body
            assert "several rota_session cookies" in reply.json()["error"]
        same = client()
        same.cookie = f"{ann.cookie}; z=a\\b; {ann.cookie}"  # the same one twice: hers
        assert (await same.call("GET", "/api/v1/session")).json()["user"] == "ann"
        assert any("several rota_session" in r[3] for r in await refusals(sched))

    run(test, tmp_path)


def test_a_cookie_bomb_is_answered_with_what_to_do(tmp_path: Path) -> None:
    """A job's page may set cookies for the host until every request of the browser is too
    large for the dashboard: the refusal says so."""

    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        web = client()
        web.cookie = "; ".join(f"c{i}={'x' * 4000}" for i in range(5))
        reply = await web.call("GET", "/api/v1/session")
        assert reply.status == 400 and b"cookies" in reply.body and b"clear" in reply.body

    run(test, tmp_path)


def test_one_users_many_tickets_and_grants_leave_everyone_elses() -> None:
    grants = PortGrants(lambda: 1000.0)
    hers, his = Door("1", "app", 8888), Door("2", "app", 8888)
    ticket = grants.ticket("alice", "a", hers)
    grant_id, _grant = grants.redeem(grants.ticket("alice", "a", hers), hers) or ("", None)
    for _ in range(max(MAX_TICKETS, MAX_GRANTS) + 1):
        redeemed = grants.redeem(grants.ticket("bob", "b", his), his)
        assert redeemed is not None
    kept = [grants.ticket("bob", "b", his) for _ in range(MAX_USER_TICKETS + 1)]
    assert grants.grant([grant_id], hers) is not None  # alice's grant is still good
    assert grants.redeem(ticket, hers) is not None  # and so is her ticket
    assert grants.redeem(kept[0], his) is None  # bob's oldest went instead
    assert grants.redeem(kept[-1], his) is not None
    assert sum(p.user == "bob" for p in grants._grants._all.values()) == MAX_USER_GRANTS


def test_one_user_holds_at_most_their_share_of_sessions() -> None:
    async def main() -> None:
        slots = UserSlots(2)

        async def session() -> AsyncGenerator[int, None]:
            yield 1
            await asyncio.sleep(3600)
            yield 2

        held = [slots.held("bob", session()) for _ in range(2)]
        for one in held:
            assert await anext(one) == 1
        with pytest.raises(ApiError) as refused:
            await anext(slots.held("bob", session()))
        assert refused.value.status == 503 and "bob has 2" in str(refused.value)
        assert await anext(slots.held("alice", session())) == 1  # others are not stalled
        await held[0].aclose()
        assert await anext(slots.held("bob", session())) == 1  # a closed one is given back

    asyncio.run(main())


def test_the_terminal_opens_with_the_pages_own_login_only(tmp_path: Path) -> None:
    """A cookie a job's page planted (bob's session, in an admin's browser) opens no terminal:
    the page sends the CSRF token of its own login, kept in its origin's storage."""

    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        web = client()
        me = await web.login(await user(sched, "ann"))

        def status(query: str, origin: str = web.base) -> tuple[int, str]:
            host = web.base.removeprefix("http://")
            name, _, port = host.partition(":")
            with socket.create_connection((name, int(port)), timeout=20) as conn:
                conn.sendall(
                    (
                        f"GET /api/v1/jobs/99/terminal?rows=5{query} HTTP/1.1\r\nHost: {host}\r\n"
                        f"Origin: {origin}\r\nCookie: {web.cookie}\r\nConnection: Upgrade\r\n"
                        "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
                    ).encode()
                )
                answer = b""
                while chunk := conn.recv(4096):
                    answer += chunk
            return int(answer.split()[1]), answer.decode()

        wrong = ("1" if me["csrf"][0] == "0" else "0") + me["csrf"][1:]  # one digit changed
        for query in ("", "&csrf=", f"&csrf={wrong}"):
            code, answer = await asyncio.to_thread(status, query)
            assert code == 403 and "csrf" in answer, (query, answer)
        code, answer = await asyncio.to_thread(status, f"&csrf={me['csrf']}")
        assert code == 404, answer  # no such job: the login was good
        ports = web.base.rpartition(":")[0] + ":1"  # a job's web port: same host, another port
        code, answer = await asyncio.to_thread(status, f"&csrf={me['csrf']}", ports)
        assert code == 403 and "Origin" in answer, answer

    run(test, tmp_path)


def test_the_door_sends_browsers_nowhere_but_the_jobs_own_prefix(tmp_path: Path) -> None:
    """Paths and ``Host`` headers meant to make the dashboard's 303 (with a ticket) point
    elsewhere: another host, another job, out of the job's prefix."""

    async def main() -> None:
        async with InProcessScheduler(tmp_path) as sched:
            await registered(sched, "n1", 1)
            ann = await user(sched, "ann")
            spec = pb.JobSpec(image="img", command=["true"])
            item = pb.SubmitItem(spec=spec, client_request_id="r1")
            async with aio_channel(sched.address, ann) as channel:
                stub = pb_grpc.JobServiceStub(channel)
                await stub.SubmitJobs(pb.SubmitJobsRequest(items=[item]))
            tokens, grants = EngineTokens(sched.engine), PortGrants(lambda: 0.0)
            dash = HttpServer(dashboard_routes(sched.engine, tokens, False, grants))
            port = await dash.start("127.0.0.1:0")
            grants.port = 1
            try:

                def door(target: str, host: str, who: str = "") -> tuple[int, str]:
                    who = who or f"Authorization: Bearer {ann}"
                    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
                        conn.sendall(
                            f"GET {target} HTTP/1.1\r\nHost: {host}\r\n{who}\r\n\r\n".encode(
                                "latin-1"
                            )
                        )
                        answer = b""
                        while chunk := conn.recv(4096):
                            answer += chunk
                    head = answer.decode("latin-1").split("\r\n")
                    where = [h[10:] for h in head if h.lower().startswith("location: ")]
                    return int(head[0].split()[1]), (where or [""])[0]

                own = "127.0.0.1:9"
                for rest in ("/evil.com/x", "/\\evil.com", "/%2e%2e/%2e%2e/2/port/80/", "/..%2f2"):
                    code, where = await asyncio.to_thread(door, f"/jobs/1/port/80{rest}", own)
                    assert code == 303 and where.startswith("http://127.0.0.1:1/jobs/1/port/80/")
                for target in ("/jobs/%2e%2e/port/80/", "/jobs/1%2f..%2f2/port/80/"):
                    assert (await asyncio.to_thread(door, target, own))[0] == 400
                for host in ("evil.com/x", "a@evil.com", "evil.com\\", "evil.com:1:2"):
                    code, where = await asyncio.to_thread(door, "/jobs/1/port/80/", host)
                    assert code == 400 and not where, host

                # with the cookie, a request naming no origin at all (a page's link on plain
                # HTTP off loopback, with rel=noreferrer) needs the page's own CSRF token
                web = Browserless(port)
                csrf = (await web.login(ann))["csrf"]
                cookie = f"Cookie: {web.cookie}"
                bare = await asyncio.to_thread(door, "/jobs/1/port/80/", own, cookie)
                assert bare[0] == 403 and not bare[1]
                for query, headers in (
                    (f"?a=1&rota_csrf={csrf}", ""),
                    ("?a=1", "\r\nSec-Fetch-Site: none"),
                    ("?a=1", "\r\nOrigin: http://127.0.0.1:9"),
                ):
                    target = f"/jobs/1/port/80/{query}"
                    code, where = await asyncio.to_thread(door, target, own, cookie + headers)
                    assert code == 303 and "rota_csrf" not in where, (query, headers)
                    assert where.startswith("http://127.0.0.1:1/jobs/1/port/80/?a=1&rota_ticket=")
                assert any("rota_csrf" in r[3] for r in await refusals(sched))
            finally:
                await dash.stop()

    asyncio.run(main())


def test_a_terminal_resize_of_infinity_is_ignored_not_fatal() -> None:
    """``{"rows": Infinity}`` (Python's JSON reads it) once raised out of the terminal's input
    loop, after which the browser's keystrokes no longer reached the shell."""

    class Socket:
        def __init__(self) -> None:
            self.messages = [
                (TEXT, b'{"rows": Infinity, "cols": 5}'),
                (TEXT, b'{"rows": 3, "cols": 4}'),
                (BINARY, b"ls\n"),
            ]

        async def receive(self) -> tuple[int, bytes]:
            if not self.messages:
                raise Closed("gone")
            return self.messages.pop(0)

    async def main() -> list[tuple[int, int, bytes]]:
        session = _Session()
        session.socket = Socket()  # type: ignore[assignment]
        return [(i.rows, i.cols, i.data) async for i in session.inputs()]

    assert asyncio.run(main()) == [(3, 4, b""), (0, 0, b"ls\n")]


def test_logging_out_ends_the_browsers_grants(tmp_path: Path) -> None:
    """An admin who logs out of the dashboard on a shared browser leaves no job's port open
    to the next person at it: the grants asked with that session end with it."""

    async def main() -> None:
        from rota.scheduler.web.dashboard import port_routes

        async with InProcessScheduler(tmp_path) as sched:
            await registered(sched, "n1", 1)
            ann = await user(sched, "ann")
            spec = pb.JobSpec(image="img", command=["true"], hold=True)
            item = pb.SubmitItem(spec=spec, client_request_id="r1")
            async with aio_channel(sched.address, ann) as channel:
                stub = pb_grpc.JobServiceStub(channel)
                await stub.SubmitJobs(pb.SubmitJobsRequest(items=[item]))
            tokens, grants = EngineTokens(sched.engine), PortGrants(lambda: 0.0)
            dash = HttpServer(dashboard_routes(sched.engine, tokens, False, grants))
            ports = HttpServer(port_routes(sched.engine, tokens, grants, False))
            web = Browserless(await dash.start("127.0.0.1:0"))
            grants.port = await ports.start("127.0.0.1:0")
            there = Browserless(grants.port)
            try:
                me = await web.login(ann)
                kept = Browserless(int(web.base.rpartition(":")[2]))
                await kept.login(ann)  # another browser of ann's, logged in too
                granted = {}
                for name, browser in (("web", web), ("kept", kept)):
                    typed = {"Sec-Fetch-Site": "none"}
                    door = await asyncio.to_thread(_no_redirect, browser, "/jobs/1/port/80/", typed)
                    where = str(door.getheader("Location")).partition(str(grants.port))[2]
                    exchanged = await asyncio.to_thread(_no_redirect, there, where, {})
                    granted[name] = str(exchanged.getheader("Set-Cookie")).split(";")[0]
                    there.cookie = granted[name]
                    held = await there.call("GET", "/jobs/1/port/80/")
                    assert held.status == 409  # the grant is good; the job is not running
                out = {"X-CSRF-Token": me["csrf"]}
                assert (await web.call("POST", "/api/v1/logout", headers=out)).status == 200
                there.cookie = granted["web"]
                assert (await there.call("GET", "/jobs/1/port/80/")).status == 401
                there.cookie = granted["kept"]  # the other login's grant stays
                assert (await there.call("GET", "/jobs/1/port/80/")).status == 409
            finally:
                await dash.stop()
                await ports.stop()

    asyncio.run(main())


def _no_redirect(web: Browserless, path: str, headers: dict[str, str]) -> http.client.HTTPResponse:
    """``web``'s GET of ``path`` as answered (a 303 not followed)."""
    conn = http.client.HTTPConnection("127.0.0.1", int(web.base.rpartition(":")[2]), timeout=20)
    conn.request("GET", path, headers={"Cookie": web.cookie, **headers})
    answer = conn.getresponse()
    answer.read()
    return answer
