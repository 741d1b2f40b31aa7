"""Issue 26's surfaces attacked (docs/security.md, "Attacked and prevented (issue 26
surfaces)"): the change feed, moving a booking through PATCH, and job mail; each test is the
attack, as bob against ann."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import grpc
import pytest

from rota.scheduler.web.changes import Feeds
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster, wait_for
from tests.support.inprocess import InProcessScheduler
from tests.support.smtp import SmtpRelay
from tests.test_web_api import Browserless, iso, registered, run, user

JOBS = "/api/v1/jobs"


def _list(feeds: Feeds, viewer: str, query: dict[str, str], rows: list[dict[str, Any]]) -> Any:
    return feeds.answer((JOBS, viewer), query, "jobs", rows, lambda r: str(r["id"]), {})


def test_one_viewer_varying_the_query_forgets_no_one_elses_feed() -> None:
    """bob asked ``/api/v1/jobs?since=0&x=N`` for 600 values of N: every feed (512) was his,
    ann's version was forgotten (her page reloaded everything) and the server held 600 copies
    of the queue's digests. Now one viewer keeps at most 16 feeds."""
    feeds = Feeds()
    queue = [{"id": i, "name": f"job{i}"} for i in range(50)]
    version = _list(feeds, "ann", {"since": "0"}, queue)["version"]
    for n in range(600):
        _list(feeds, "bob", {"since": "0", "x": str(n)}, queue)
    after = _list(feeds, "ann", {"since": version}, queue)
    assert after["full"] is False and after["jobs"] == []
    bobs = _list(feeds, "bob", {"since": "0", "x": "599"}, queue)["version"]
    assert _list(feeds, "bob", {"since": bobs, "x": "599"}, queue)["full"] is False
    first = _list(feeds, "bob", {"since": "0", "x": "0"}, queue)["version"]  # asked anew
    for n in range(1, 17):
        _list(feeds, "bob", {"since": "0", "x": str(n)}, queue)
    assert _list(feeds, "bob", {"since": first, "x": "0"}, queue)["full"] is True


def test_a_version_does_not_count_another_viewers_changes() -> None:
    """A version's number grew with every change of every feed: bob, polling his own
    unchanged listing, saw when ann's private listing (her ended jobs) changed."""
    feeds = Feeds()
    bobs = _list(feeds, "bob", {"since": "0"}, [{"id": 1}])["version"]
    for n in range(5):
        _list(feeds, "ann", {"since": "0", "state": "ended"}, [{"id": 100 + n}])
    assert _list(feeds, "bob", {"since": bobs}, [{"id": 1}])["version"] == bobs


def test_a_user_cannot_move_or_extend_a_booking_onto_gpus_out_of_service(tmp_path: Path) -> None:
    """bob's PATCH kept his booking's GPUs, so the availability check of a new booking was
    skipped: he moved it into root's MAINT window on n1 and extended it on a drained node,
    both of which ``POST`` refuses him."""

    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 2)
        await registered(sched, "n2", 2)
        bob = client()
        csrf = {"X-CSRF-Token": (await bob.login(await user(sched, "bob")))["csrf"]}
        now = time.time()
        hour = 3600
        maint = {"name": "fix-n1", "gpus": {"n1": []}, "users": ["admin"], "flags": ["MAINT"]}
        maint |= {"start": iso(now + 10 * hour), "end": iso(now + 12 * hour)}
        root = client()
        root_csrf = {"X-CSRF-Token": (await root.login(sched.admin_token))["csrf"]}
        assert (await root.call("POST", "/api/v1/reservations", maint, root_csrf)).status == 201
        for name, node in (("bob-1", "n1"), ("bob-2", "n2")):
            body = {"name": name, "gpus": {node: [0]}}
            body |= {"start": iso(now + hour), "end": iso(now + 2 * hour)}
            assert (await bob.call("POST", "/api/v1/reservations", body, csrf)).status == 201

        into = {"start": iso(now + 10 * hour), "end": iso(now + 11 * hour)}
        moved = await bob.call("PATCH", "/api/v1/reservations/bob-1", into, csrf)
        assert moved.status == 409, moved.body
        assert "under maintenance (fix-n1)" in moved.json()["error"]
        over = await bob.call(
            "PATCH", "/api/v1/reservations/bob-1", {"end": iso(now + 11 * hour)}, csrf
        )
        assert over.status == 409 and "fix-n1" in over.json()["error"]
        shorter = await bob.call(
            "PATCH", "/api/v1/reservations/bob-1", {"end": iso(now + 1.5 * hour)}, csrf
        )
        assert shorter.status == 200, "time given back is always fine"

        await sched.admin.DrainNode(pb.DrainNodeRequest(name="n2", reason="broken fan"))
        longer = await bob.call(
            "PATCH", "/api/v1/reservations/bob-2", {"end": iso(now + 5 * hour)}, csrf
        )
        assert longer.status == 409 and "n2" in longer.json()["error"], longer.body
        users = await bob.call("PATCH", "/api/v1/reservations/bob-2", {"users": ["bob"]}, csrf)
        assert users.status == 200, "a change adding no time is not refused by the drain"
        [kept] = [
            r
            for r in (await bob.call("GET", "/api/v1/reservations")).json()["reservations"]
            if r["name"] == "bob-2"
        ]
        assert kept["end"] == iso(now + 2 * hour).replace("+00:00", "Z")
        admin = await root.call(
            "PATCH", "/api/v1/reservations/bob-2", {"end": iso(now + 5 * hour)}, root_csrf
        )
        assert admin.status == 200, "an administrator may still book it"

    run(test, tmp_path)


ARRAY = """#!/bin/sh
#SBATCH --job-name={name}
#SBATCH --array=0-{last}
#SBATCH --mail-type={types}
#SBATCH --mail-user=victim@elsewhere.example
#ROTA image={image}
[ "$SLURM_ARRAY_TASK_ID" != {fail} ]
"""


@pytest.mark.docker
def test_an_array_is_mailed_as_a_whole_not_once_per_task(
    cluster: Cluster, test_image: str, tmp_path: Path
) -> None:
    """bob's array of 10,000 tasks with ``--mail-type=ALL --mail-user=ANYONE`` sent 20,000
    mails through the lab's relay (8 here for 4 tasks). As sbatch's, an array now gets one
    BEGIN and one END or FAIL mail for the whole of it, every task's only with
    ``ARRAY_TASKS``."""
    with SmtpRelay() as relay:
        config = tmp_path / "scheduler.yaml"
        config.write_text(
            "scheduler:\n  open_registration: true\n"
            f"  mail_relay: {relay.address}\n  mail_domain: lab.example\n"
            "  mail_allowed_domains: ['*']\n"
        )
        cluster.start_scheduler("--config", str(config))
        cluster.start_agent("n1", gpus=2)
        cluster.env_extra["ROTA_TOKEN"] = cluster.add_user("bob")
        arrays = {}
        for name, last, types, fail in (
            ("flood", 3, "ALL", 2),
            ("fine", 2, "END", 9),
            ("each", 1, "END,ARRAY_TASKS", 9),
        ):
            script = tmp_path / f"{name}.sh"
            script.write_text(
                ARRAY.format(name=name, last=last, types=types, image=test_image, fail=fail)
            )
            submitted = cluster.cli("gsub", "--parsable", str(script), check=True)
            assert "warning" not in submitted.stderr, submitted.stderr
            arrays[name] = (submitted.stdout.strip(), last)
        for array, last in arrays.values():
            for task in range(last + 1):
                cluster.wait_state(f"{array}_{task}", "COMPLETED", "FAILED")
        wait_for(lambda: len(relay.mails()) >= 5, 30, what="five mails")
        each = arrays["each"][0]
        got = sorted(" ".join(m["Subject"].split()).split(",")[0] for _, _, m in relay.mails())
        kinds = sorted(s.split(" ", 2)[2] for s in got)  # "Name=flood Began", ...
        assert kinds == [
            "Name=each Ended",
            "Name=each Ended",
            "Name=fine Ended",
            "Name=flood Began",
            "Name=flood Failed",  # task 2 failed; the array's last task to end sends it
        ], got
        assert {
            f"rota Job_id={each}_0 Name=each Ended",
            f"rota Job_id={each}_1 Name=each Ended",
        } <= set(got)
        assert {to for _, (to,), _ in relay.mails()} == {"victim@elsewhere.example"}


def test_job_mail_goes_only_to_the_labs_domains(tmp_path: Path) -> None:
    """bob's ``--mail-user=victim@elsewhere.example`` made the lab's relay mail anyone
    outside, with a subject he wrote (the job's name). Addresses are now refused at submit
    unless at ``mail_domain`` or in ``mail_allowed_domains`` (``*``: any); header injection
    (CR/LF, a second recipient) was and is refused by the address rule."""

    async def main() -> None:
        async with InProcessScheduler(
            tmp_path, mail_relay="127.0.0.1:1", mail_domain="lab.example"
        ) as sched:
            await registered(sched, "n1", 1)
            jobs = pb_grpc.JobServiceStub(sched.user_channel("bob"))
            for to in (
                "victim@elsewhere.example",
                "victim@ELSEWHERE.example",
                "ann@lab.example.evil.example",
                "ann@lab.example\r\nBcc: victim@elsewhere.example",
                "ann@lab.example,victim@elsewhere.example",
            ):
                spec = pb.JobSpec(image="img", command=["true"], mail_type=["END"], mail_user=to)
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await jobs.SubmitJobs(pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)]))
                assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, to
                assert "mail_user" in (refused.value.details() or ""), to
            listed = await jobs.ListJobs(pb.ListJobsRequest(all_states=True))
            assert list(listed.jobs) == [], "a refused submission stores nothing"
            for to in ("ann", "ann@lab.example", "Ann@Lab.Example"):
                spec = pb.JobSpec(image="img", command=["true"], mail_type=["END"], mail_user=to)
                await jobs.SubmitJobs(pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)]))
        (tmp_path / "any").mkdir()
        async with InProcessScheduler(
            tmp_path / "any", mail_relay="127.0.0.1:1", mail_allowed_domains=("*",)
        ) as sched:
            await registered(sched, "n1", 1)
            spec = pb.JobSpec(image="img", command=["true"], mail_user="x@elsewhere.example")
            await sched.jobs.SubmitJobs(pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)]))

    asyncio.run(main())


def test_a_listing_period_of_centuries_is_refused_not_expanded(tmp_path: Path) -> None:
    """``GET /api/v1/reservations?end=9999-12-31`` expanded an admin's DAILY booking into
    2.9 million windows on the event loop: the scheduler answered nothing for over 20 s and
    marked its nodes DOWN for missed heartbeats. A period is now at most 400 days."""

    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 2)
        root = client()
        root_csrf = {"X-CSRF-Token": (await root.login(sched.admin_token))["csrf"]}
        now = time.time()
        daily = {"name": "daily", "gpus": {"n1": [0]}, "users": ["admin"], "flags": ["DAILY"]}
        daily |= {"start": iso(now + 3600), "end": iso(now + 7200)}
        assert (await root.call("POST", "/api/v1/reservations", daily, root_csrf)).status == 201
        bob = client()
        await bob.login(await user(sched, "bob"))
        huge = await bob.call("GET", "/api/v1/reservations?end=9999-12-31")
        assert huge.status == 400 and huge.json()["error"].startswith("end: the period"), huge.body
        year = await bob.call("GET", "/api/v1/reservations?end=" + quote(iso(now + 365 * 86400)))
        [listed] = year.json()["reservations"]
        assert len(listed["windows"]) in (365, 366)

    run(test, tmp_path)
