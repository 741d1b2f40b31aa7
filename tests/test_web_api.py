"""The dashboard's HTTP side without a browser: the API answers 401 without a login, 403 for a
change without the CSRF token, sets a HttpOnly SameSite=Strict cookie at login, shows nodes and
jobs through the engine, keeps other users' output private, and serves its own files with a
strict Content-Security-Policy."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from rota.scheduler.http import HttpServer
from rota.scheduler.web.dashboard import dashboard_routes
from rota.scheduler.web.identity import EngineTokens
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler
from tests.support.tokens import aio_channel


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class Browserless:
    """HTTP calls to the dashboard port with a cookie jar of one (off the event loop)."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.cookie = ""

    def _call(self, method: str, path: str, body: Any, headers: dict[str, str]) -> Reply:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")  # as the dashboard sends
        if self.cookie:
            request.add_header("Cookie", self.cookie)
        for key, value in headers.items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request, timeout=20) as reply:
                return Reply(reply.status, dict(reply.headers), reply.read())
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, dict(exc.headers), exc.read())

    async def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> Reply:
        return await asyncio.to_thread(self._call, method, path, body, headers or {})

    async def login(self, token: str) -> dict[str, Any]:
        reply = await self.call("POST", "/api/v1/login", {"token": token})
        assert reply.status == 200, reply.body
        self.cookie = reply.headers["Set-Cookie"].split(";", 1)[0]
        return dict(reply.json())


Test = Callable[[InProcessScheduler, Callable[[], Browserless]], Coroutine[Any, Any, None]]


def run(test: Test, root: Path) -> None:
    async def main() -> None:
        async with InProcessScheduler(root) as sched:
            tokens = EngineTokens(sched.engine)
            http = HttpServer(dashboard_routes(sched.engine, tokens, secure=False))
            port = await http.start("127.0.0.1:0")
            try:
                await asyncio.wait_for(test(sched, lambda: Browserless(port)), 60)
            finally:
                await http.stop()

    asyncio.run(main())


async def user(sched: InProcessScheduler, name: str) -> str:
    """A new user's token."""
    return (
        await sched.engine.users.add_user(name, False, (), "", None, None, sched.admin_principal)
    )[1]


async def refusals(sched: InProcessScheduler) -> list[tuple[str, str, str, str]]:
    """The audit log's refused web requests: (user, action, target, detail)."""
    entries = await sched.engine.users.audit(0, 1000, sched.admin_principal)
    return [
        (e.user, e.action, e.target, e.detail)
        for e in entries
        if not e.allowed and e.action.startswith("web ")
    ]


def test_no_login_is_401_and_a_change_without_csrf_is_403(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        ann, bob = await user(sched, "ann"), await user(sched, "bob")
        web = client()
        for path in ("/api/v1/nodes", "/api/v1/jobs", "/api/v1/session", "/api/v1/jobs/1/log"):
            reply = await web.call("GET", path)
            assert reply.status == 401, path
            assert "log in" in reply.json()["error"]
        assert (await web.call("POST", "/api/v1/logout")).status == 401
        wrong = await web.call("POST", "/api/v1/login", {"token": "nope"})
        assert wrong.status == 401
        assert "Set-Cookie" not in wrong.headers
        bad_bearer = await web.call("GET", "/api/v1/nodes", headers={"Authorization": "Bearer x"})
        assert bad_bearer.status == 401

        login = await web.call("POST", "/api/v1/login", {"token": ann})
        assert login.status == 200
        cookie = login.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie  # this port serves no TLS
        me = login.json()
        assert me["user"] == "ann" and me["admin"] is False and len(me["csrf"]) > 20
        web.cookie = cookie.split(";", 1)[0]
        assert (await web.call("GET", "/api/v1/session")).json()["csrf"] == me["csrf"]

        missing = await web.call("POST", "/api/v1/logout")
        assert missing.status == 403
        assert "x-csrf-token" in missing.json()["error"]
        forged = await web.call("POST", "/api/v1/logout", headers={"X-CSRF-Token": "forged"})
        assert forged.status == 403
        assert (await web.call("GET", "/api/v1/nodes")).status == 200  # still logged in

        out = await web.call("POST", "/api/v1/logout", headers={"X-CSRF-Token": me["csrf"]})
        assert out.status == 200
        assert "Max-Age=0" in out.headers["Set-Cookie"]
        assert (await web.call("GET", "/api/v1/nodes")).status == 401  # the session is gone

        bearer = await web.call("GET", "/api/v1/nodes", headers={"Authorization": f"Bearer {bob}"})
        assert bearer.status == 200
        counts = bearer.json()["summary"]  # ginfo -s's counts, for the overview's totals
        assert counts["gpus_free"] == sum(n["gpus_free"] for n in bearer.json()["nodes"])

        await web.login(ann)
        await sched.engine.users.revoke_user("ann", sched.admin_principal)
        gone = await web.call("GET", "/api/v1/nodes")
        assert gone.status == 401 and "no longer current" in gone.json()["error"]

        # refused credentials and forged changes are in the audit log, as gRPC's refusals
        # are; pages opened before a login (no credentials at all) are not
        assert await refusals(sched) == [
            ("", "web POST /api/v1/login", "", "UNAUTHENTICATED: token: not a current rota token"),
            (
                "",
                "web GET /api/v1/nodes",
                "",
                "UNAUTHENTICATED: the bearer token is not a current rota token",
            ),
            (
                "ann",
                "web POST /api/v1/logout",
                "",
                "PERMISSION_DENIED: missing or wrong x-csrf-token header",
            ),
            (
                "ann",
                "web POST /api/v1/logout",
                "",
                "PERMISSION_DENIED: missing or wrong x-csrf-token header",
            ),
            (
                "",
                "web GET /api/v1/nodes",
                "",
                "UNAUTHENTICATED: your rota token is no longer current; log in again",
            ),
        ]
        entries = await sched.engine.users.audit(0, 1000, sched.admin_principal)
        assert all(e.peer.startswith("ipv4:127.0.0.1:") for e in entries if e.action[:4] == "web ")

    run(test, tmp_path)


async def registered(sched: InProcessScheduler, name: str = "n1", gpus: int = 2) -> None:
    added = await sched.admin.AddNode(pb.AddNodeRequest(name=name, user="root"))
    await sched.agent(name, added.token, gpus)


def test_nodes_and_jobs_as_the_engine_sees_them(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 2)
        ann, bob = await user(sched, "ann"), await user(sched, "bob")
        web = client()
        await web.login(ann)
        nodes = (await web.call("GET", "/api/v1/nodes")).json()["nodes"]
        assert [(n["name"], n["gpus_total"], n["gpus_free"]) for n in nodes] == [("n1", 2, 2)]
        assert [g["index"] for g in nodes[0]["gpus"]] == [0, 1]

        spec = pb.JobSpec(image="img", command=["true"], resources=pb.Resources(gpus=1))
        item = pb.SubmitItem(spec=spec, client_request_id="r1")
        async with aio_channel(sched.address, ann) as channel:
            await pb_grpc.JobServiceStub(channel).SubmitJobs(pb.SubmitJobsRequest(items=[item]))
        jobs = (await web.call("GET", "/api/v1/jobs")).json()["jobs"]
        assert [(j["id"], j["user"]) for j in jobs] == [("1", "ann")]
        detail = (await web.call("GET", "/api/v1/jobs/1")).json()
        assert detail["job"]["state"] in ("PENDING", "CONFIGURING")
        assert detail["events"] and detail["may_read_log"] is True

        assert (await web.call("GET", "/api/v1/jobs/99")).status == 404
        bad = await web.call("GET", "/api/v1/jobs?state=SOMETIMES")
        assert bad.status == 400 and bad.json()["error"].startswith("state:")
        huge = await web.call("GET", "/api/v1/jobs/1/log?tail=2147483647")
        assert huge.status == 400 and huge.json()["error"] == "tail: must be from 1 to 16777216"

        other = client()
        await other.login(bob)
        assert (await other.call("GET", "/api/v1/jobs/1")).json()["may_read_log"] is False
        refused = await other.call("GET", "/api/v1/jobs/1/log")
        assert refused.status == 403
        assert "belongs to ann" in refused.json()["error"]
        [(who, action, target, detail)] = await refusals(sched)
        assert (who, action, target) == ("bob", "web GET /api/v1/jobs/{id}/log", "id=1")
        assert detail.startswith("PERMISSION_DENIED: job 1 belongs to ann")

    run(test, tmp_path)


def test_the_page_and_its_files_are_served_locally(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        web = client()
        page = await web.call("GET", "/")
        assert page.status == 200
        assert page.headers["Content-Type"].startswith("text/html")
        csp = page.headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp
        html = page.body.decode()
        assert "http://" not in html and "https://" not in html  # no CDN
        for name, kind in (
            ("app.js", "text/javascript"),
            ("app.css", "text/css"),
            ("vendor/xterm.mjs", "text/javascript"),  # the terminal's, from npm, not a CDN
            ("vendor/xterm.css", "text/css"),
        ):
            served = await web.call("GET", f"/static/{name}")
            assert served.status == 200 and served.headers["Content-Type"].startswith(kind)
        assert (await web.call("GET", "/static/../http.py")).status == 404
        assert (await web.call("GET", "/static/nothing.js")).status == 404
        assert (await web.call("DELETE", "/")).status == 405

    run(test, tmp_path)


def test_with_tls_the_port_serves_https_and_the_cookie_is_secure(tmp_path: Path) -> None:
    from rota.cli.certs import init_certs
    from rota.tls import http_ssl_context

    init_certs(tmp_path / "tls")
    tls = http_ssl_context(
        str(tmp_path / "tls" / "scheduler.pem"), str(tmp_path / "tls" / "scheduler-key.pem")
    )
    trust = ssl.create_default_context(cafile=str(tmp_path / "tls" / "ca.pem"))

    def fetch(port: int, path: str, body: bytes | None = None) -> tuple[int, dict[str, str]]:
        request = urllib.request.Request(
            f"https://127.0.0.1:{port}{path}", body, method="POST" if body else "GET"
        )
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=20, context=trust) as reply:
            return reply.status, dict(reply.headers)

    def plain(port: int) -> None:
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()

    async def main() -> None:
        async with InProcessScheduler(tmp_path) as sched:
            tokens = EngineTokens(sched.engine)
            http = HttpServer(dashboard_routes(sched.engine, tokens, secure=True))
            port = await http.start("127.0.0.1:0", tls)
            try:
                status, _ = await asyncio.to_thread(fetch, port, "/")
                assert status == 200
                body = json.dumps({"token": await user(sched, "ann")}).encode()
                status, headers = await asyncio.to_thread(fetch, port, "/api/v1/login", body)
                assert status == 200 and "; Secure" in headers["Set-Cookie"]
                await asyncio.to_thread(plain, port)
            finally:
                await http.stop()

    asyncio.run(main())


def test_booking_follows_greserve_rules_and_only_the_maker_cancels(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 4)
        ann, bob = await user(sched, "ann"), await user(sched, "bob")
        root = (
            await sched.engine.users.add_user(
                "root", True, (), "", None, None, sched.admin_principal
            )
        )[1]
        web, other, admin = client(), client(), client()
        ann_csrf = {"X-CSRF-Token": (await web.login(ann))["csrf"]}
        bob_csrf = {"X-CSRF-Token": (await other.login(bob))["csrf"]}
        root_csrf = {"X-CSRF-Token": (await admin.login(root))["csrf"]}
        now = time.time()
        window = {"start": iso(now + 3600), "end": iso(now + 3 * 3600)}

        made = await web.call(
            "POST",
            "/api/v1/reservations",
            {"name": "ann-a", "gpus": {"n1": [1, 2]}, **window},
            ann_csrf,
        )
        assert made.status == 201, made.body
        booked = made.json()
        assert booked["gpus"] == {"n1": [1, 2]} and booked["users"] == ["ann"]
        assert booked["created_by"] == "ann" and booked["may_delete"] and booked["mine"]
        async with aio_channel(sched.address, ann) as channel:
            listed = await pb_grpc.ReservationServiceStub(channel).ListReservations(
                pb.ListReservationsRequest()
            )
        assert [(r.name, [tuple(g.indices) for g in r.gpus]) for r in listed.reservations] == [
            ("ann-a", [(1, 2)])
        ]

        # the same checks and refusals as greserve create
        clash = await other.call(
            "POST",
            "/api/v1/reservations",
            {"name": "bob-a", "gpus": {"n1": [2, 3]}, **window},
            bob_csrf,
        )
        assert clash.status == 409 and "reserved by ann-a" in clash.json()["error"]
        for_ann = await other.call(
            "POST",
            "/api/v1/reservations",
            {"name": "bob-b", "gpus": {"n1": [3]}, "users": ["ann"], **window},
            bob_csrf,
        )
        assert for_ann.status == 403 and "only for themselves" in for_ann.json()["error"]
        no_gpu = await other.call(
            "POST",
            "/api/v1/reservations",
            {"name": "bob-c", "gpus": {"n1": [9]}, **window},
            bob_csrf,
        )
        assert no_gpu.status == 400 and no_gpu.json()["error"].startswith("gpus: node n1 has no")
        later = await other.call("GET", "/api/v1/reservations?start=" + quote(window["start"]))
        [seen] = later.json()["reservations"]
        assert seen["name"] == "ann-a" and not seen["mine"] and not seen["may_delete"]
        assert seen["windows"] == [[booked["start"], booked["end"]]]

        refused = await other.call("DELETE", "/api/v1/reservations/ann-a", headers=bob_csrf)
        assert refused.status == 403 and "made by ann" in refused.json()["error"]
        maint = await admin.call(
            "POST",
            "/api/v1/reservations",
            {"name": "fix-n1", "gpus": {"n1": []}, "users": ["root"], "flags": ["MAINT"], **window},
            root_csrf,
        )
        assert maint.status == 201 and maint.json()["gpus"] == {"n1": [0, 1, 2, 3]}
        assert (await web.call("DELETE", "/api/v1/reservations/ann-a")).status == 403  # CSRF
        gone = await web.call("DELETE", "/api/v1/reservations/ann-a", headers=ann_csrf)
        assert gone.status == 200
        assert (await admin.call("DELETE", "/api/v1/reservations/fix-n1", headers=root_csrf)).ok
        assert (await web.call("GET", "/api/v1/reservations")).json()["reservations"] == []

        audited = [
            (e.user, e.action, e.target, e.allowed)
            for e in await sched.engine.users.audit(0, 1000, sched.admin_principal)
            if e.action.startswith("web ") and e.user in ("root", "bob")
        ]
        assert audited == [
            ("bob", "web POST /api/v1/reservations", "name=bob-b", False),
            ("bob", "web DELETE /api/v1/reservations/{name}", "name=ann-a", False),
            ("root", "web POST /api/v1/reservations", "name=fix-n1", True),
            ("root", "web DELETE /api/v1/reservations/{name}", "name=fix-n1", True),
        ]

    run(test, tmp_path)


def test_the_overview_counts_gpus_of_open_windows_as_reserved(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 4)
        await registered(sched, "n2", 2)
        ann = await user(sched, "ann")
        web = client()
        csrf = {"X-CSRF-Token": (await web.login(ann))["csrf"]}
        now = time.time()
        for name, start in (("now", now - 60), ("later", now + 7200)):
            body = {
                "name": name,
                "gpus": {"n1": [0, 1, 2] if name == "now" else [3]},
                "start": iso(start),
                "end": iso(start + 3600),
            }
            assert (await web.call("POST", "/api/v1/reservations", body, csrf)).status == 201
        nodes = (await web.call("GET", "/api/v1/nodes")).json()["nodes"]
        assert [(n["name"], n["gpus_reserved"]) for n in nodes] == [("n1", 3), ("n2", 0)]

    run(test, tmp_path)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")
