"""Job web ports' own origin without a browser or a job: tickets are good once, for their own
port and 30 seconds; grants end when idle; without ``web_ports_listen`` the port paths say
so; and no change with the dashboard's cookie is accepted from another origin (the ports
origin is another port of the same host), nor answered with CORS headers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from rota.scheduler.http import HttpServer
from rota.scheduler.web.dashboard import dashboard_routes
from rota.scheduler.web.identity import EngineTokens
from rota.scheduler.web.port_grants import GRANT_IDLE, TICKET_SECONDS, Door, PortGrants
from tests.support.inprocess import InProcessScheduler
from tests.test_web_api import Browserless, refusals, run, user


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_ticket_opens_its_own_port_once_within_30_seconds() -> None:
    clock = Clock()
    grants = PortGrants(clock)
    door, other = Door("12", "port", 8888), Door("12", "port", 8889)
    ticket = grants.ticket("alice", "h", door)
    assert len(ticket) >= 32  # 192 random bits, URL-safe
    assert grants.redeem(ticket, other) is None  # another port's: refused, and spent
    assert grants.redeem(ticket, door) is None
    ticket = grants.ticket("alice", "h", door)
    redeemed = grants.redeem(ticket, door)
    assert redeemed is not None and redeemed[1].user == "alice"
    assert grants.redeem(ticket, door) is None  # replayed
    assert grants.redeem("forged-" + ticket, door) is None
    late = grants.ticket("alice", "h", door)
    clock.now += TICKET_SECONDS + 1
    assert grants.redeem(late, door) is None  # expired

    grant_id = redeemed[0]
    assert grants.grant([grant_id], other) is None  # a grant opens its own port only
    assert grants.grant(["nope", grant_id], door) is not None
    clock.now += GRANT_IDLE + 1
    assert grants.grant([grant_id], door) is None  # idle too long


def test_job_ports_without_their_address_say_which_setting(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        web = client()
        bearer = {"Authorization": f"Bearer {await user(sched, 'ann')}"}
        for path in ("/jobs/1/port/8888/", "/jobs/1/app/8888/lab", "/jobs/1/port/8888"):
            reply = await web.call("GET", path, headers=bearer)
            assert reply.status == 503 and "web_ports_listen" in reply.json()["error"], path
        refused = await web.call("POST", "/jobs/1/port/8888/api", {}, bearer)
        assert refused.status == 405  # the dashboard never relays a job's app

    run(test, tmp_path)


def test_changes_from_another_origin_are_refused_and_answered_without_cors(
    tmp_path: Path,
) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        web = client()
        me = await web.login(await user(sched, "ann"))
        own = web.base
        ports = "http://127.0.0.1:1"  # a job's web port: same host, another port
        csrf = {"X-CSRF-Token": me["csrf"]}
        for foreign, named in (
            ({"Origin": ports}, "Origin"),
            ({"Sec-Fetch-Site": "same-site"}, "Sec-Fetch-Site"),
            ({"Sec-Fetch-Site": "cross-site"}, "Sec-Fetch-Site"),
            ({"Referer": ports + "/jobs/3/port/8888/lab"}, "Referer"),
        ):
            reply = await web.call("POST", "/api/v1/jobs/99/cancel", {}, {**csrf, **foreign})
            assert reply.status == 403 and named in reply.json()["error"], (foreign, reply.body)
            assert not any(k.lower().startswith("access-control") for k in reply.headers)
        # the dashboard's own page (or a script naming no origin) gets through to the job
        for mine in (
            {"Origin": own},
            {"Sec-Fetch-Site": "same-origin"},
            {"Referer": own + "/"},
            {},
        ):
            reply = await web.call("POST", "/api/v1/jobs/99/cancel", {}, {**csrf, **mine})
            assert reply.status in (404, 409), (mine, reply.body)
        # a preflight from the ports origin is not allowed, and reads carry no CORS headers
        preflight = {
            "Origin": ports,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "x-csrf-token, content-type",
        }
        for method, path, headers in (
            ("OPTIONS", "/api/v1/jobs/99/cancel", preflight),
            ("GET", "/api/v1/session", {"Origin": ports}),
            ("GET", "/api/v1/jobs", {"Origin": ports}),
        ):
            reply = await web.call(method, path, headers=headers)
            assert not any(k.lower().startswith("access-control") for k in reply.headers), path
        # a door to a job's port asked by another origin's page hands out no ticket
        door = await web.call("GET", "/jobs/99/port/8888/", headers={"Sec-Fetch-Site": "same-site"})
        assert door.status == 403 and "Sec-Fetch-Site" in door.json()["error"]
        logged = [r for r in await refusals(sched) if r[0] == "ann"]
        assert len(logged) == 5 and all("PERMISSION_DENIED" in r[3] for r in logged)

    run(test, tmp_path)


def test_ports_origin_serves_job_ports_only(tmp_path: Path) -> None:
    """What the ports origin answers for everything but a job's port: 404; and a job's port
    with the dashboard's cookie or a bearer token but no grant: 401."""

    async def main() -> None:
        from rota.scheduler.web.dashboard import port_routes

        async with InProcessScheduler(tmp_path) as sched:
            tokens = EngineTokens(sched.engine)
            grants = PortGrants(lambda: 0.0)
            dash = HttpServer(dashboard_routes(sched.engine, tokens, False, grants))
            ports = HttpServer(port_routes(sched.engine, tokens, grants, False))
            web = Browserless(await dash.start("127.0.0.1:0"))
            grants.port = await ports.start("127.0.0.1:0")
            try:
                ann = await user(sched, "ann")
                await web.login(ann)
                there = Browserless(grants.port)
                there.cookie = web.cookie  # browsers send it to every port of the host
                for path in ("/", "/api/v1/session", "/api/v1/jobs", "/metrics", "/app.js"):
                    assert (await there.call("GET", path)).status == 404, path
                assert (await there.call("POST", "/api/v1/login", {"token": ann})).status == 404
                for headers in ({}, {"Authorization": f"Bearer {ann}"}):
                    reply = await there.call("GET", "/jobs/1/port/8888/", headers=headers)
                    assert reply.status == 401 and "dashboard" in reply.json()["error"]
                forged = await there.call("GET", "/jobs/1/port/8888/?rota_ticket=forged")
                assert forged.status == 403 and "rota_ticket" in forged.json()["error"]
            finally:
                await ports.stop()
                await dash.stop()

    asyncio.run(asyncio.wait_for(main(), 60))
