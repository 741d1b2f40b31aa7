"""Change feeds: a listing asked with ``?since=VERSION`` answers only what changed since the
listing that gave ``VERSION`` (docs/web.md, "Change feed").

The server remembers, per feed (one route, one query, one viewer), a digest of each row as
last listed and the version at which it last changed; nothing per client. A listing is still
built whole on the server; only the answer is small. A row's digest is taken of its
``signature`` (the row itself unless the route says otherwise), so readings that move without
changing what a page draws are not changes. Versions are ``TAG-N``: ``N`` counts the changes
of that feed alone (another viewer's activity never shows in it) and ``TAG`` is random per
feed (made anew when a feed is forgotten and asked again, and by every process), so a version
of another feed or viewer, from before a restart, from a feed forgotten since, or older than
the removals remembered gets everything again (``"full": true``), never a wrong difference.
One viewer keeps at most ``max_per_viewer`` feeds (their least recently asked is forgotten
first): varying a query's parameters neither grows memory without end nor forgets other
viewers' feeds.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rota.scheduler.core.errors import UserError
from rota.scheduler.web.views import Json, encode

MAX_FEEDS = 512  # feeds remembered; the least recently asked is forgotten first
MAX_PER_VIEWER = 16  # feeds of one viewer remembered (their routes times their queries)
MAX_REMOVED = 4096  # removed ids remembered per feed; an older ``since`` gets everything
_VERSION = re.compile(r"([0-9a-f]{8})-([0-9]{1,18})")
ORDER = "order"  # the part holding the rows' ids in listing order


@dataclass(slots=True)
class _Feed:
    tag: str  # names this feed in its versions
    viewer: str  # whose feed it is
    counter: int = 0  # changes recorded; the N of this feed's versions
    parts: dict[tuple[str, str], tuple[bytes, int]] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)  # row id -> version, oldest first
    floor: int = 0  # removals at or before this version are forgotten


@dataclass(frozen=True, slots=True)
class Delta:
    """What changed: the new ``version``, whether everything is sent (``full``), the rows
    added or changed (in listing order), the ids removed, and the extra parts that changed
    (``order``, the ids in listing order, among them when membership or order changed)."""

    version: str
    full: bool
    rows: list[Json]
    removed: list[str]
    extras: dict[str, Any]

    def json(self, rows_key: str) -> Json:
        """The answer: ``version``, ``full``, ``rows_key``, ``removed`` and the extras."""
        return {
            "version": self.version,
            "full": self.full,
            rows_key: self.rows,
            "removed": self.removed,
            **self.extras,
        }


class Feeds:
    """Every feed of this process (event loop only)."""

    def __init__(
        self,
        max_feeds: int = MAX_FEEDS,
        max_removed: int = MAX_REMOVED,
        max_per_viewer: int = MAX_PER_VIEWER,
    ) -> None:
        self.max_feeds = max_feeds
        self.max_removed = max_removed
        self.max_per_viewer = max_per_viewer
        self._feeds: OrderedDict[tuple[str, ...], _Feed] = OrderedDict()

    @staticmethod
    def since(query: dict[str, str]) -> tuple[str, int] | None:
        """The ``since`` of a query as (feed tag, number): None when absent, ("", -1) for 0
        (everything); UserError naming ``since`` when it is no version at all."""
        text = query.get("since")
        if text is None:
            return None
        text = text.strip()
        if text in ("", "0"):
            return "", -1
        found = _VERSION.fullmatch(text)
        if found is None:
            raise UserError(f"since: {text[:40]!r} is not a version this API gave (or 0)")
        return found[1], int(found[2])

    def delta(
        self,
        key: tuple[str, ...],
        since: tuple[str, int],
        rows: Sequence[Json],
        id_of: Callable[[Json], str],
        extras: dict[str, Any],
        signature: Callable[[Json], Any] = lambda row: row,
    ) -> Delta:
        """Record ``rows`` (and ``extras``) as the feed ``key`` (``(route, viewer, ...)``)
        lists them now and answer ``since``: the rows and extras whose signature changed after
        it, the ids removed after it; everything when ``since`` is not this feed's or older
        than it remembers."""
        feed = self._feed(key)
        now = feed.counter + 1
        changed = False
        ids = [id_of(row) for row in rows]
        listed: dict[tuple[str, str], Any] = {
            ("row", i): signature(r) for i, r in zip(ids, rows, strict=True)
        }
        listed |= {("extra", k): v for k, v in extras.items()}
        listed[("extra", ORDER)] = ids
        for part, value in listed.items():
            digest = hashlib.blake2b(encode(value), digest_size=16).digest()
            known = feed.parts.get(part)
            if known is None or known[0] != digest:
                feed.parts[part] = (digest, now)
                if part[0] == "row":
                    feed.removed.pop(part[1], None)
                changed = True
        for part in [p for p in feed.parts if p not in listed]:
            del feed.parts[part]
            if part[0] == "row":
                feed.removed[part[1]] = now
                changed = True
        while len(feed.removed) > self.max_removed:
            oldest = next(iter(feed.removed))
            feed.floor = max(feed.floor, feed.removed.pop(oldest))
        if changed:
            feed.counter = now
        version = f"{feed.tag}-{feed.counter}"
        tag, number = since
        full = tag != feed.tag or number < feed.floor or number > feed.counter
        after = -1 if full else number
        fresh = {part for part, (_d, v) in feed.parts.items() if v > after}
        return Delta(
            version=version,
            full=full,
            rows=[row for i, row in zip(ids, rows, strict=True) if ("row", i) in fresh],
            removed=[] if full else [i for i, v in feed.removed.items() if v > after],
            extras={k: v for k, v in (extras | {ORDER: ids}).items() if ("extra", k) in fresh},
        )

    def answer(
        self,
        key: tuple[str, ...],
        query: dict[str, str],
        rows_key: str,
        rows: Sequence[Json],
        id_of: Callable[[Json], str],
        extras: dict[str, Any],
        signature: Callable[[Json], Any] = lambda row: row,
    ) -> Json:
        """A listing's answer: without ``since`` in ``query`` every row under ``rows_key``,
        the extras and the ``version``; with it, ``Delta.json``. Both record the listing in
        the feed ``key`` (``(route, viewer)``, with the query's other parameters)."""
        since = self.since(query)
        asked = tuple(f"{k}={v}" for k, v in sorted(query.items()) if k != "since")
        delta = self.delta(key + asked, since or ("", -1), rows, id_of, extras, signature)
        if since is None:
            return {"version": delta.version, rows_key: list(rows), **extras}
        return delta.json(rows_key)

    def _feed(self, key: tuple[str, ...]) -> _Feed:
        feed = self._feeds.pop(key, None)
        if feed is None:
            viewer = key[1] if len(key) > 1 else ""
            feed = _Feed(tag=secrets.token_hex(4), viewer=viewer)
            theirs = [k for k, f in self._feeds.items() if f.viewer == viewer]
            for old in theirs[: max(0, len(theirs) + 1 - self.max_per_viewer)]:
                del self._feeds[old]  # least recently asked first
        self._feeds[key] = feed
        while len(self._feeds) > self.max_feeds:
            self._feeds.popitem(last=False)
        return feed
