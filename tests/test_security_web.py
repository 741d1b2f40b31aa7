"""Issue 22, web and listings: attacks on the dashboard's JSON API and on job listings, each
written as the attack (docs/security.md, "Web and listings")."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

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


def test_many_logins_of_one_user_leave_other_users_sessions_alone() -> None:
    now = [1000.0]
    book = Sessions(lambda: now[0])
    bob_id, _ = book.open("bob-token", "bob")
    for _ in range(sessions.MAX_SESSIONS + 1):  # the attack: 10,001 logins of mallory
        book.open("mallory-token", "mallory")
    assert book.get(bob_id) is not None  # bob is still logged in
    last, _ = book.open("mallory-token", "mallory")
    assert book.get(last) is not None  # mallory's newest session works
    assert len(book) == sessions.MAX_PER_USER + 1  # mallory's oldest went, not others'


def test_logins_beyond_every_session_are_refused_not_made_room_for() -> None:
    book = Sessions(lambda: 1000.0)
    first, _ = book.open("t0", "u0")
    for i in range(1, sessions.MAX_SESSIONS):
        book.open(f"t{i}", f"u{i}")
    with pytest.raises(sessions.TooManySessions):
        book.open("new", "newcomer")
    assert book.get(first) is not None


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
