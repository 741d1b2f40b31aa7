"""Issue 22, web and listings: attacks on the dashboard's JSON API and on job listings, each
written as the attack (docs/security.md, "Web and listings")."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from rota.scheduler.store.store import Store
from rota.scheduler.web import sessions
from rota.scheduler.web.sessions import Sessions
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler
from tests.support.tokens import aio_channel
from tests.test_web_api import Browserless, run, user


def _no_constants(name: str) -> float:
    raise ValueError(f"not JSON: {name}")


def test_nan_telemetry_from_one_node_leaves_the_nodes_api_valid_json(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        added = await sched.admin.AddNode(pb.AddNodeRequest(name="n1", user="root"))
        agent = await sched.agent("n1", added.token, 2)
        nan, inf = math.nan, math.inf
        bad = pb.GpuTelemetry(
            index=0, uuid="GPU-n1-0", utilization=nan, memory_used=7, temperature=inf, power=-inf
        )
        good = pb.GpuTelemetry(index=1, uuid="GPU-n1-1", utilization=40, memory_used=9)
        agent.send.put_nowait(pb.AgentMessage(heartbeat=pb.Heartbeat(gpus=[bad, good])))
        await agent.handled()
        await sched.intake_idle()  # the heartbeat's telemetry is applied
        web = client()
        await web.login(await user(sched, "ann"))
        reply = await web.call("GET", "/api/v1/nodes")
        assert reply.status == 200
        nodes = json.loads(reply.body, parse_constant=_no_constants)  # no NaN, no Infinity
        gpus = nodes["nodes"][0]["gpus"]
        assert (gpus[0]["utilization"], gpus[0]["temperature"], gpus[0]["power"]) == (
            None,
            None,
            None,
        )
        assert gpus[0]["memory_used"] == 7 and gpus[1]["utilization"] == 40
        assert gpus[0]["state"] == "idle"  # an infinite temperature is no reading: not "hot"

    run(test, tmp_path)


def test_the_api_encoder_never_writes_nan_or_infinity() -> None:
    from rota.scheduler.web.views import encode

    data = {"a": math.nan, "b": [math.inf, 1.5, {"c": -math.inf}], "d": (2, "x")}
    assert json.loads(encode(data), parse_constant=_no_constants) == {
        "a": None,
        "b": [None, 1.5, {"c": None}],
        "d": [2, "x"],
    }


def _book(tmp_path: Path, clock: Callable[[], float]) -> tuple[Store, Sessions]:
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    return store, Sessions(store.web_sessions, clock, per_user=4, total=20)


def test_many_logins_of_one_user_leave_other_users_sessions_alone(tmp_path: Path) -> None:
    async def attack() -> None:
        store, book = _book(tmp_path, lambda: 1000.0)
        bob_id, _ = await book.open("bob-hash", "bob")
        for _ in range(book.total + 1):  # the attack: more logins of mallory than all sessions
            await book.open("mallory-hash", "mallory")
        assert await book.get(bob_id) is not None  # bob is still logged in
        last, _ = await book.open("mallory-hash", "mallory")
        assert await book.get(last) is not None  # mallory's newest session works
        # mallory's oldest went, not others': a new process finds what the store kept
        again = Sessions(store.web_sessions, lambda: 1000.0, per_user=4, total=20)
        assert await again.get(bob_id) is not None
        store.close()

    asyncio.run(attack())


def test_logins_beyond_every_session_are_refused_not_made_room_for(tmp_path: Path) -> None:
    async def crowd() -> None:
        store, book = _book(tmp_path, lambda: 1000.0)
        first, _ = await book.open("h0", "u0")
        for i in range(1, book.total):
            await book.open(f"h{i}", f"u{i}")
        with pytest.raises(sessions.TooManySessions):
            await book.open("new", "newcomer")
        assert await book.get(first) is not None
        store.close()

    asyncio.run(crowd())


def test_an_idle_or_old_session_ends_and_a_stored_one_carries_no_secret(tmp_path: Path) -> None:
    async def age() -> None:
        now = [1000.0]
        store, book = _book(tmp_path, lambda: now[0])
        old, session = await book.open("h", "ann")
        idle, _ = await book.open("h", "ann")
        stored = store.web_sessions.find(sessions.id_hash(old))
        assert stored is not None and old not in repr(stored) and session.csrf not in repr(stored)
        now[0] += book.idle - 1
        assert await book.get(old) is not None  # used within the idle time
        now[0] += 2
        assert await book.get(idle) is None  # idle too long
        now[0] = 1000.0 + book.lifetime + 1
        assert await book.get(old) is None  # used, but past its lifetime
        assert store.web_sessions.find(sessions.id_hash(old)) is None
        store.close()

    asyncio.run(age())


def test_login_from_another_site_or_as_text_plain_is_refused(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        ann = await user(sched, "ann")
        web = client()
        host = web.base.removeprefix("http://")
        # a form post or a text/plain fetch: what another site's page sends without asking
        for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
            reply = await web.call(
                "POST", "/api/v1/login", {"token": ann}, headers={"Content-Type": kind}
            )
            assert reply.status == 415, kind
            assert "Set-Cookie" not in reply.headers
            assert "Content-Type: a login must be sent as application/json" in reply.json()["error"]
        for origin in ("https://evil.example", "http://127.0.0.1:1", "null"):
            reply = await web.call(
                "POST", "/api/v1/login", {"token": ann}, headers={"Origin": origin}
            )
            assert reply.status == 403, origin
            assert "Set-Cookie" not in reply.headers
            assert reply.json()["error"].startswith("Origin: a login is accepted only from")
        # the dashboard's own page (same origin) and scripts (no Origin) still log in
        own = await web.call("POST", "/api/v1/login", {"token": ann}, {"Origin": f"http://{host}"})
        assert own.status == 200 and "Set-Cookie" in own.headers
        assert (await web.call("POST", "/api/v1/login", {"token": ann})).status == 200
        refused = [
            e
            for e in await sched.engine.users.audit(0, 1000, sched.admin_principal)
            if not e.allowed
        ]
        assert len(refused) == 6
        assert all(e.action == "web POST /api/v1/login" for e in refused)

    run(test, tmp_path)


async def _ended_job_of(sched: InProcessScheduler, token: str) -> str:
    """A job of the token's user with a private environment, cancelled (ended)."""
    spec = pb.JobSpec(image="img", command=["true"], env={"SECRET": "s3cret"}, hold=True)
    async with aio_channel(sched.address, token) as channel:
        stub = pb_grpc.JobServiceStub(channel)
        reply = await stub.SubmitJobs(pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)]))
        job_id = reply.jobs[0].job_ids[0]
        await stub.CancelJobs(pb.CancelJobsRequest(ids=[job_id]))
    return str(job_id)


def test_listings_hide_what_gacct_hides_from_other_users(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        added = await sched.admin.AddNode(pb.AddNodeRequest(name="n1", user="root"))
        await sched.agent("n1", added.token, 2)
        alice, bob = await user(sched, "alice"), await user(sched, "bob")
        ended = await _ended_job_of(sched, alice)
        live_spec = pb.JobSpec(image="img", command=["true"], env={"K": "v"}, hold=True)
        async with aio_channel(sched.address, alice) as channel:
            stub = pb_grpc.JobServiceStub(channel)
            item = pb.SubmitItem(spec=live_spec)
            live = (await stub.SubmitJobs(pb.SubmitJobsRequest(items=[item]))).jobs[0]
            mine = await stub.ListJobs(pb.ListJobsRequest(all_states=True, users=["alice"]))
        assert {j.id for j in mine.jobs} == {ended, live.job_ids[0]}  # alice sees her own

        # bob asks as gqueue -t CD,CA,F -u alice and gqueue -t all would
        async with aio_channel(sched.address, bob) as channel:
            stub = pb_grpc.JobServiceStub(channel)
            finished = await stub.ListJobs(
                pb.ListJobsRequest(
                    states=[pb.COMPLETED, pb.CANCELLED, pb.FAILED],
                    users=["alice"],
                )
            )
            every = await stub.ListJobs(pb.ListJobsRequest(all_states=True, users=["alice"]))
            acct = pb_grpc.AccountingServiceStub(channel)
            gacct = await acct.ListFinished(pb.AccountingFilter(users=["alice"]))
        assert [j.id for j in gacct.jobs] == []  # what gacct -u alice shows bob
        assert [j.id for j in finished.jobs] == []
        assert [j.id for j in every.jobs] == [live.job_ids[0]]  # the queue stays public
        assert dict(every.jobs[0].spec.env) == {}  # ... without its private parts

        web = client()
        await web.login(bob)
        for query in ("state=all&user=alice", "state=CA&user=alice", "state=ended&user=alice"):
            shown = (await web.call("GET", f"/api/v1/jobs?{query}")).json()["jobs"]
            assert ended not in [j["id"] for j in shown], query
        admin = client()
        await admin.login(sched.admin_token)
        shown = (await admin.call("GET", "/api/v1/jobs?state=all&user=alice")).json()["jobs"]
        assert ended in [j["id"] for j in shown]  # admins see everything, as in gacct

    run(test, tmp_path)
