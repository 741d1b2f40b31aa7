"""Issue 26's surfaces attacked (docs/security.md, "Attacked and prevented (issue 26
surfaces)"): the change feed, moving a booking through PATCH, and job mail; each test is the
attack, as bob against ann."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rota.scheduler.web.changes import Feeds
from tests.support.inprocess import InProcessScheduler
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
