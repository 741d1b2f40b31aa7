"""Issue 26, item 6: an idle dashboard at 500 nodes moves less than 50 KB a minute, measured
in a real browser. The load generator (bench/loadgen) holds 500 simulated nodes on a real
scheduler process, each reporting its readings every 2 s (so nearly every node has moved
between two polls); headless chromium shows the timeline (the heaviest view) and the bytes the
page moves after its first full load are read from the DevTools Protocol's network events: each
request's headers and body as sent, and each answer's bytes as received
(`Network.loadingFinished`'s `encodedDataLength`: headers and body on the wire). The page
polls every 2 s after a change and doubles its wait after each round that brings nothing, up to
8 s; once it has settled there, the bytes of ROUNDS whole rounds are divided by the time they
span, from the first round's first request to the next round's (the browser's own timestamps),
and scaled to a minute."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selenium.webdriver.remote.webdriver import WebDriver

from bench.loadgen import auth, servers
from bench.loadgen.fleet import Fleet
from bench.loadgen.node import NodeSettings
from tests.test_e2e_web import log_in

NODES = 500
ROUNDS = 4  # idle poll rounds measured, each after the page's longest wait
SETTLED_S = 7.0  # a wait this long between rounds: the page is at its idle pace (8 s, app.js)
ROUND_START = "/api/v1/nodes?"  # the first of the timeline's polls in each round


@dataclass
class Traffic:
    """The page's requests from the DevTools network log, in the order they were sent: each
    one's URL, request line, headers (as sent on the wire where Chrome reports them) and body,
    and the bytes it received once it has finished, and when it was sent (seconds, the
    browser's clock)."""

    urls: dict[str, str] = field(default_factory=dict)
    lines: dict[str, str] = field(default_factory=dict)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    bodies: dict[str, int] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=dict)
    sent_at: dict[str, float] = field(default_factory=dict)
    done_at: dict[str, float] = field(default_factory=dict)

    def read(self, drv: WebDriver) -> None:
        """Take the network events logged since the last read."""
        for entry in drv.get_log("performance"):
            event = json.loads(entry["message"])["message"]
            params: dict[str, Any] = event.get("params", {})
            rid = params.get("requestId", "")
            if event["method"] == "Network.requestWillBeSent":
                req = params["request"]
                self.urls[rid] = "/" + req["url"].split("/", 3)[-1]
                self.lines[rid] = f"{req['method']} {self.urls[rid]} HTTP/1.1"
                self.headers.setdefault(rid, req["headers"])
                self.bodies[rid] = len(req.get("postData", "").encode())
                self.sent_at[rid] = float(params["timestamp"])
            elif event["method"] == "Network.requestWillBeSentExtraInfo":
                self.headers[rid] = params["headers"]  # what went on the wire
            elif event["method"] == "Network.loadingFinished":
                self.received[rid] = int(params["encodedDataLength"])
                self.done_at[rid] = float(params["timestamp"])

    def rounds(self) -> list[list[str]]:
        """The requests sent, grouped into poll rounds (each starts with its nodes poll)."""
        grouped: list[list[str]] = []
        for rid, url in self.urls.items():
            if url.startswith(ROUND_START):
                grouped.append([])
            if grouped:
                grouped[-1].append(rid)
        return grouped

    def waited(self, rounds: list[list[str]], i: int) -> float:
        """How long the page waited before round ``i``: from the last answer of round
        ``i - 1`` to round ``i``'s first request (a slow answer is not a wait)."""
        ends = [self.done_at.get(r) for r in rounds[i - 1]]
        if None in ends:
            return 0.0
        return self.sent_at[rounds[i][0]] - max(e for e in ends if e is not None)

    def moved(self, rids: list[str]) -> int:
        """Bytes sent (request line, headers, body) and received by the requests ``rids``."""
        sent = sum(
            len(self.lines[r])
            + 4
            + self.bodies[r]
            + sum(len(k) + len(str(v)) + 4 for k, v in self.headers[r].items())
            for r in rids
        )
        return sent + sum(self.received.get(r, 0) for r in rids)


def _every_node_reported(port: int, cookie: str) -> None:
    """Wait (off the measured page) until all the nodes are up and have sent readings."""
    deadline = time.monotonic() + 120
    while True:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/nodes")
        req.add_header("Cookie", cookie)
        with urllib.request.urlopen(req, timeout=60) as reply:
            nodes = json.load(reply)["nodes"]
        if len(nodes) == NODES and all(
            n["state"] != "DOWN" and n["gpus"] and n["gpus"][0].get("temperature") is not None
            for n in nodes
        ):
            return
        assert time.monotonic() < deadline, "the nodes did not all report within 120 s"
        time.sleep(0.5)


def _login_cookie(port: int, token: str) -> str:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/login",
        data=json.dumps({"token": token}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as reply:
        return str(reply.headers["Set-Cookie"]).split(";", 1)[0]


def test_an_idle_page_at_500_nodes_moves_less_than_50_kb_a_minute(
    tmp_path: Path, network_browser: WebDriver
) -> None:
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
            cookie = await asyncio.to_thread(_login_cookie, http_port, token)
            await asyncio.to_thread(_every_node_reported, http_port, cookie)
            await asyncio.to_thread(_watch_the_idle_page, network_browser, http_port, token)
        finally:
            await fleet.finish()

    try:
        asyncio.run(measure())
    finally:
        server.stop()


def _watch_the_idle_page(drv: WebDriver, port: int, token: str) -> None:
    base = f"http://127.0.0.1:{port}"
    log_in(drv, base, token)
    drv.get(base + "/#timeline")
    traffic = Traffic()
    deadline = time.monotonic() + 150
    while True:  # the first full load, the page settling at its idle pace, then ROUNDS rounds
        time.sleep(0.5)
        traffic.read(drv)
        rounds = traffic.rounds()
        starts = [traffic.sent_at[one[0]] for one in rounds]
        first = max(
            (i for i, one in enumerate(rounds) if traffic.urls[one[0]].endswith("since=0")),
            default=len(rounds),
        )
        settled = next(
            (i for i in range(first + 1, len(rounds)) if traffic.waited(rounds, i) >= SETTLED_S),
            len(rounds),
        )
        measured = [r for one in rounds[settled : settled + ROUNDS] for r in one]
        if len(rounds) > settled + ROUNDS and all(r in traffic.received for r in measured):
            break
        assert time.monotonic() < deadline, f"{len(rounds)} poll rounds in 150 s: {starts}"
    full_load = traffic.moved(rounds[first])
    asked = [traffic.urls[r] for r in measured]
    assert all("since=" in u and not u.endswith("since=0") for u in asked), asked
    moved = traffic.moved(measured)
    received = sum(traffic.received[r] for r in measured)
    span = starts[settled + ROUNDS] - starts[settled]
    per_minute = moved * 60 / span
    print(
        f"\n{NODES} nodes, chromium: first load {full_load / 1024:.0f} KiB; idle page "
        f"{moved / ROUNDS:.0f} B per poll round ({len(asked) // ROUNDS} requests: "
        f"{(moved - received) / ROUNDS:.0f} B sent, {received / ROUNDS:.0f} B received), "
        f"{ROUNDS} rounds in {span:.1f} s: {per_minute / 1000:.1f} kB a minute"
    )
    each = [(traffic.urls[r], traffic.received[r]) for r in measured]
    assert per_minute < 50_000, each
    assert full_load > 50_000 * 10  # what a page without the feed would move per poll
