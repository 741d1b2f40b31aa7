"""Issue 26, item 6: the JSON API's change feed (``?since=VERSION``). Pure checks of what a
version answers, and the API's listings as a page that follows them sees them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rota.scheduler.core.errors import UserError
from rota.scheduler.web.changes import Feeds
from rota.scheduler.web.views import node_signature
from rota.v1 import rota_pb2 as pb
from tests.support.inprocess import InProcessScheduler
from tests.test_web_api import Browserless, run, user

KEY = ("/api/v1/things", "ann")


def _ask(feeds: Feeds, since: str | None, rows: list[dict[str, Any]]) -> dict[str, Any]:
    query = {} if since is None else {"since": since}
    return feeds.answer(KEY, query, "things", rows, lambda r: str(r["id"]), {"n": len(rows)})


def test_a_version_answers_only_what_changed_after_it() -> None:
    feeds = Feeds()
    a, b, c = {"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}
    plain = _ask(feeds, None, [a, b])
    assert plain["things"] == [a, b] and plain["n"] == 2 and "full" not in plain
    first = _ask(feeds, "0", [a, b])  # everything, with the order and the extras
    assert (first["full"], first["things"], first["order"], first["n"]) == (
        True,
        [a, b],
        ["1", "2"],
        2,
    )
    same = _ask(feeds, first["version"], [a, b])
    assert same == {"version": first["version"], "full": False, "things": [], "removed": []}
    b2 = {"id": 2, "v": "B"}
    moved = _ask(feeds, same["version"], [a, b2])
    assert (moved["things"], moved["removed"]) == ([b2], []) and "order" not in moved
    grown = _ask(feeds, moved["version"], [a, b2, c])
    assert (grown["things"], grown["order"], grown["n"]) == ([c], ["1", "2", "3"], 3)
    shrunk = _ask(feeds, grown["version"], [b2, c])
    assert (shrunk["things"], shrunk["removed"], shrunk["order"]) == ([], ["1"], ["2", "3"])
    # a page that missed several answers still gets every change since its version
    late = _ask(feeds, moved["version"], [b2, c])
    assert (late["things"], late["removed"]) == ([c], ["1"])


def test_an_unknown_version_gets_everything_and_a_malformed_one_is_refused() -> None:
    feeds, other = Feeds(), Feeds()  # another process (a restarted scheduler)
    rows = [{"id": 1}]
    version = _ask(feeds, "0", rows)["version"]
    assert _ask(other, version, rows)["full"] is True
    assert _ask(feeds, version.split("-")[0] + "-999", rows)["full"] is True  # from the future
    fresh = Feeds(max_feeds=1)
    v1 = _ask(fresh, "0", rows)["version"]
    fresh.answer(("/other", "bob"), {}, "x", [], str, {})  # the first feed is forgotten
    assert _ask(fresh, v1, rows)["full"] is True
    bobs = feeds.answer(("/api/v1/things", "bob"), {"since": version}, "things", [], str, {})
    assert bobs["full"] is True  # another viewer's version: never a difference of ann's rows
    with pytest.raises(UserError, match=r"^since: 'yesterday' is not a version this API gave"):
        _ask(feeds, "yesterday", rows)


def test_removals_beyond_what_is_remembered_send_everything() -> None:
    feeds = Feeds(max_removed=2)
    start = _ask(feeds, "0", [{"id": i} for i in range(5)])["version"]
    for keep in (4, 3, 2):
        _ask(feeds, "0", [{"id": i} for i in range(keep)])
    assert _ask(feeds, start, [{"id": 0}, {"id": 1}])["full"] is True


def test_a_node_is_not_sent_again_for_a_heartbeat_or_a_reading_within_a_step() -> None:
    gpu = {"index": 0, "utilization": 0.0, "temperature": 34.1, "power": 70.2, "memory_used": 4}
    node = {"name": "n1", "last_heartbeat": "2026-11-27T20:00:00Z", "gpus": [gpu]}
    later = node | {"last_heartbeat": "2026-11-27T20:00:02Z"}
    later["gpus"] = [gpu | {"temperature": 36.2, "power": 73.9, "utilization": 2.0}]
    assert node_signature(later) == node_signature(node)
    busy = node | {"gpus": [gpu | {"utilization": 90.0}]}
    assert node_signature(busy) != node_signature(node)


def test_the_api_listings_follow_a_job_through_the_feed(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler, client: Callable[[], Browserless]) -> None:
        added = await sched.admin.AddNode(pb.AddNodeRequest(name="n1", user="root"))
        await sched.agent("n1", added.token, 2)
        web = client()
        await web.login(await user(sched, "ann"))
        nodes = (await web.call("GET", "/api/v1/nodes?since=0")).json()
        assert nodes["full"] and [n["name"] for n in nodes["nodes"]] == ["n1"]
        assert nodes["summary"]["nodes"] == 1
        again = (await web.call("GET", f"/api/v1/nodes?since={nodes['version']}")).json()
        assert (again["nodes"], again["removed"], again["full"]) == ([], [], False)
        assert "summary" not in again  # unchanged: not sent again
        jobs = (await web.call("GET", "/api/v1/jobs?state=active&since=0")).json()
        assert jobs["jobs"] == [] and jobs["order"] == []
        spec = pb.JobSpec(image="img", command=["true"], hold=True)
        reply = await sched.jobs.SubmitJobs(pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)]))
        job_id = str(reply.jobs[0].job_ids[0])
        url = f"/api/v1/jobs?state=active&since={jobs['version']}"
        added_job = (await web.call("GET", url)).json()
        assert [j["id"] for j in added_job["jobs"]] == [job_id] and added_job["order"] == [job_id]
        await sched.jobs.CancelJobs(pb.CancelJobsRequest(ids=[job_id]))
        url = f"/api/v1/jobs?state=active&since={added_job['version']}"
        gone = (await web.call("GET", url)).json()
        assert (gone["jobs"], gone["removed"]) == ([], [job_id])
        bad = await web.call("GET", "/api/v1/nodes?since=x")
        assert bad.status == 400 and bad.json()["error"].startswith("since:")

    run(test, tmp_path)
