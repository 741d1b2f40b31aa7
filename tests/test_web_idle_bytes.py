"""Issue 26, item 6: an idle dashboard at 500 nodes moves less than 50 KB a minute. The load
generator (bench/loadgen) holds 500 simulated nodes on a real scheduler process; a page that
follows the change feed polls the timeline's three listings once per telemetry round (every
node's readings move between two polls, more than in a real page's 2 s), and the bytes of
those polls, requests and answers with their headers, are counted: 30 poll rounds (a minute
at the page's 2 s) must stay under 50 KB. Bytes are counted, not time."""

from __future__ import annotations

import asyncio
import http.client
import json
import time
from pathlib import Path
from typing import Any

from bench.loadgen import auth, servers
from bench.loadgen.fleet import Fleet
from bench.loadgen.node import NodeSettings

NODES = 500
ROUNDS = 4  # poll rounds measured; the page makes 30 a minute
POLLS_PER_MINUTE = 30  # the page polls every 2 s
TIMELINE = (  # what the timeline view polls (the heaviest view)
    "/api/v1/nodes",
    "/api/v1/jobs?state=active",
    "/api/v1/reservations?start=2026-01-05T00:00:00Z&end=2026-01-12T00:00:00Z",
)


class Page:
    """A logged-in page's HTTP calls, each counted in bytes as sent and received."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookie = ""
        self.moved = 0

    def call(self, method: str, path: str, body: bytes | None = None) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Host": f"127.0.0.1:{self.port}", "Accept": "*/*"}
        if self.cookie:
            headers["Cookie"] = self.cookie
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body, headers)
        reply = conn.getresponse()
        data = reply.read()
        conn.close()
        sent = len(f"{method} {path} HTTP/1.1\r\n") + len(body or b"")
        sent += sum(len(k) + len(v) + 4 for k, v in headers.items()) + 2
        got = len(f"HTTP/1.1 {reply.status} {reply.reason}\r\n") + len(data) + 2
        got += sum(len(k) + len(v) + 4 for k, v in reply.getheaders())
        self.moved += sent + got
        assert reply.status == 200, data[:300]
        if cookie := reply.getheader("Set-Cookie"):
            self.cookie = cookie.split(";", 1)[0]
        return json.loads(data)


def _readings(page: Page) -> dict[str, float]:
    """Each node's first GPU temperature (it moves at every heartbeat of the load generator)."""
    nodes = page.call("GET", "/api/v1/nodes")["nodes"]
    return {n["name"]: n["gpus"][0]["temperature"] for n in nodes}


async def _every_node_reported(page: Page, before: dict[str, float]) -> dict[str, float]:
    """Wait (off the measured page) until every node's readings moved since ``before``."""
    deadline = time.monotonic() + 120
    while True:
        now = await asyncio.to_thread(_readings, page)
        if len(now) == NODES and all(now[n] != before.get(n) for n in now):
            return now
        assert time.monotonic() < deadline, "the nodes did not all report within 120 s"
        await asyncio.sleep(0.5)


def test_an_idle_page_at_500_nodes_moves_less_than_50_kb_a_minute(tmp_path: Path) -> None:
    http_port = servers.free_port()
    settings = {
        "http_listen": f"127.0.0.1:{http_port}",
        "heartbeat_interval": 1.0,
        "max_telemetry_rate": 250,  # 500 nodes: telemetry from each every 2 s
        "node_timeout": 60,
    }
    server = servers.start_scheduler(tmp_path, settings)

    async def measure() -> None:
        await server.wait_ready()
        token = auth.admin_token(tmp_path / "scheduler.db")
        names = [f"sim-{i:05d}" for i in range(NODES)]
        tokens = await servers.register(server.address, token, names)
        fleet = Fleet([(n, tokens[n]) for n in names], 2, 2.0, NodeSettings(server.address))
        try:
            await fleet.go()
            assert await fleet.wait_connected(120) is not None
            page, watcher = Page(http_port), Page(http_port)
            for p in (page, watcher):
                await asyncio.to_thread(
                    p.call, "POST", "/api/v1/login", json.dumps({"token": token}).encode()
                )
            readings = await _every_node_reported(watcher, {})
            versions = {}
            for path in TIMELINE:
                sep = "&" if "?" in path else "?"
                first = await asyncio.to_thread(page.call, "GET", f"{path}{sep}since=0")
                versions[path] = first["version"]
                if path == TIMELINE[0]:
                    assert len(first["nodes"]) == NODES
                    assert all(n["state"] != "DOWN" for n in first["nodes"])
            full_load = page.moved
            page.moved = 0
            for _ in range(ROUNDS):
                readings = await _every_node_reported(watcher, readings)
                for path in TIMELINE:
                    sep = "&" if "?" in path else "?"
                    got = await asyncio.to_thread(
                        page.call, "GET", f"{path}{sep}since={versions[path]}"
                    )
                    assert got["full"] is False
                    versions[path] = got["version"]
            per_minute = page.moved * POLLS_PER_MINUTE / ROUNDS
            print(
                f"\n{NODES} nodes: first load {full_load / 1024:.0f} KiB; idle page "
                f"{page.moved / ROUNDS:.0f} B per poll round, {per_minute / 1000:.1f} kB a minute"
            )
            assert per_minute < 50_000
            assert full_load > 50_000 * 10  # what a page without the feed would move per poll
        finally:
            await fleet.finish()

    try:
        asyncio.run(measure())
    finally:
        server.stop()
