"""The API routes the dashboard page's actions use, without a browser: moving a booking's edge
(PATCH, greserve update's checks), a job's cancel/hold/release/requeue (gcancel's and gcontrol's
rules), what a GPU object says about availability and bookings, the read-only calendar feed
(its key alone opens it; a new token closes the old link) and the bookings' CSV sheet (a login
needed; the GPUs booked, by index)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rota.bookingsheet import read_sheet
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler
from tests.support.tokens import aio_channel
from tests.test_web_api import Browserless, iso, registered, run, user


def test_moving_a_bookings_edge_follows_greserve_update(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 4)
        ann, bob = await user(sched, "ann"), await user(sched, "bob")
        web, other = client(), client()
        ann_csrf = {"X-CSRF-Token": (await web.login(ann))["csrf"]}
        bob_csrf = {"X-CSRF-Token": (await other.login(bob))["csrf"]}
        now = time.time()
        for who, csrf, name, start in (
            (web, ann_csrf, "ann-a", 3600),
            (other, bob_csrf, "bob-a", 4 * 3600),
        ):
            body = {
                "name": name,
                "gpus": {"n1": [0]},
                "start": iso(now + start),
                "end": iso(now + start + 3600),
            }
            assert (await who.call("POST", "/api/v1/reservations", body, csrf)).status == 201

        longer = await web.call(
            "PATCH", "/api/v1/reservations/ann-a", {"end": iso(now + 3 * 3600)}, ann_csrf
        )
        assert longer.status == 200 and longer.json()["end"] == iso(now + 3 * 3600).replace(
            "+00:00", "Z"
        )
        clash = await web.call(
            "PATCH", "/api/v1/reservations/ann-a", {"end": iso(now + 5 * 3600)}, ann_csrf
        )
        assert clash.status == 409 and "bob-a" in clash.json()["error"], clash.body
        theirs = await other.call(
            "PATCH", "/api/v1/reservations/ann-a", {"end": iso(now + 2 * 3600)}, bob_csrf
        )
        assert theirs.status == 403 and "made by ann" in theirs.json()["error"]
        odd = await web.call("PATCH", "/api/v1/reservations/ann-a", {"name": "renamed"}, ann_csrf)
        assert odd.status == 400 and odd.json()["error"].startswith("name: cannot be updated")
        [kept] = [
            r
            for r in (await web.call("GET", "/api/v1/reservations")).json()["reservations"]
            if r["name"] == "ann-a"
        ]
        assert kept["end"] == longer.json()["end"], "refused changes change nothing"

    run(test, tmp_path)


def test_job_actions_follow_the_engine_rules(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 2)
        ann, bob = await user(sched, "ann"), await user(sched, "bob")
        web, other = client(), client()
        ann_csrf = {"X-CSRF-Token": (await web.login(ann))["csrf"]}
        bob_csrf = {"X-CSRF-Token": (await other.login(bob))["csrf"]}
        spec = pb.JobSpec(
            image="img",
            command=["true"],
            resources=pb.Resources(gpus=1),
            begin_time=time.time() + 3600,
        )
        item = pb.SubmitItem(spec=spec, client_request_id="r1")
        async with aio_channel(sched.address, ann) as channel:
            await pb_grpc.JobServiceStub(channel).SubmitJobs(pb.SubmitJobsRequest(items=[item]))

        refused = await other.call("POST", "/api/v1/jobs/1/hold", None, bob_csrf)
        assert refused.status == 403 and "belongs to ann" in refused.json()["error"]
        detail = (await other.call("GET", "/api/v1/jobs/1")).json()
        assert detail["may_act"] is False and detail["image"] == "img"
        assert (await web.call("POST", "/api/v1/jobs/1/hold")).status == 403  # no CSRF token
        held = await web.call("POST", "/api/v1/jobs/1/hold", None, ann_csrf)
        assert held.status == 200 and held.json()["results"][0]["ok"], held.body
        assert (await web.call("GET", "/api/v1/jobs/1")).json()["job"]["held"] == "user"
        assert (await web.call("POST", "/api/v1/jobs/1/release", None, ann_csrf)).status == 200
        assert (await web.call("GET", "/api/v1/jobs/1")).json()["job"]["held"] == ""
        assert (await web.call("POST", "/api/v1/jobs/1/cancel", None, ann_csrf)).status == 200
        assert (await web.call("GET", "/api/v1/jobs/1")).json()["job"]["state"] == "CANCELLED"
        again = await web.call("POST", "/api/v1/jobs/1/cancel", None, ann_csrf)
        assert again.status == 409, again.body
        unknown = await web.call("POST", "/api/v1/jobs/1/explode", None, ann_csrf)
        assert unknown.status == 404 and unknown.json()["error"].startswith("action:")

    run(test, tmp_path)


def test_gpus_say_what_is_booked_and_the_feed_opens_with_its_key(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 2)
        ann = await user(sched, "ann")
        web = client()
        me = await web.login(ann)
        assert me["accounts"] == ["ann"] and me["default_account"] == "ann"
        assert me["may_repeat"] is True  # reservations.users_may_repeat, on by default
        csrf = {"X-CSRF-Token": me["csrf"]}
        now = time.time()
        body = {"name": "now", "gpus": {"n1": [1]}, "start": iso(now - 60), "end": iso(now + 3600)}
        assert (await web.call("POST", "/api/v1/reservations", body, csrf)).status == 201
        [node] = (await web.call("GET", "/api/v1/nodes")).json()["nodes"]
        assert node["partitions"] == ["default"]
        assert [(g["reserved"], g["unavailable"]) for g in node["gpus"]] == [("", ""), ("now", "")]

        path = (await web.call("GET", "/api/v1/ical")).json()["path"]
        assert path.startswith("/api/v1/ical/ann/") and path.endswith(".ics")
        answer = await client().call("GET", path)  # no cookie, no token: the key alone
        assert answer.status == 200 and answer.headers["Content-Type"].startswith("text/calendar")
        assert "SUMMARY:now: 1 GPU(s) for ann" in answer.body.decode()
        assert (await client().call("GET", path.replace("/ann/", "/bob/"))).status == 404
        sheet = await web.call("GET", "/api/v1/reservations.csv")
        assert sheet.status == 200 and sheet.headers["Content-Type"].startswith("text/csv")
        assert 'filename="bookings.csv"' in sheet.headers["Content-Disposition"]
        [row] = read_sheet(sheet.body.decode(), datetime.now(UTC))
        assert row.fields["nodes"] == ["n1"] and row.fields["gpu_indices"] == [1], row
        assert (await client().call("GET", "/api/v1/reservations.csv")).status == 401
        await sched.engine.users.new_token("ann", sched.admin_principal)
        assert (await client().call("GET", path)).status == 404, "a new token closes the old link"

    run(test, tmp_path)
