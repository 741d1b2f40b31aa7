"""ListNodes in pages with a summary over every node (issue 14 item 4), on the real services."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rota.messages import GpuTelemetry, Heartbeat
from rota.scheduler.api import convert_nodes
from rota.scheduler.core.errors import UserError
from rota.scheduler.facade.nodes import NODES_PER_HOP
from tests.support.core import Harness
from tests.support.counted import CountedExecutor
from tests.test_heartbeats import busy_core


def test_pages_cover_every_node_once_in_name_order_and_the_summary_counts_all(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path)
    for i in range(7):
        h.connect(f"n{i}", gpus=2)
    job = h.submit(gpus=1)
    h.schedule()
    h.event("n0", job, "STARTED")
    h.s.nodes.drain("n6", "fan", "root")
    h.s.model.nodes["n5"].connected = False

    names: list[str] = []
    token = ""
    pages = 0
    while True:
        page = h.s.nodes.page(3, token, summary=False)
        assert page.summary is None and len(page.nodes) <= 3
        names += [node.name for node, _ in page.nodes]
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert names == [f"n{i}" for i in range(7)] and pages == 3

    summary = h.s.nodes.page(0, "", summary=False, summary_only=True).summary
    assert summary is not None
    assert summary.nodes == 7
    assert summary.states == {"MIXED": 1, "IDLE": 4, "DOWN": 1, "DRAINED": 1}
    assert summary.gpus_total == 14
    assert summary.gpus_free == 1 + 4 * 2  # the busy node's other GPU and four idle nodes
    assert h.s.nodes.page(2, "", summary=True).summary == summary


def test_page_size_beyond_the_limit_is_refused_by_name(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    with pytest.raises(UserError, match="page_size: 5000 must be 0 to 1000"):
        h.s.nodes.page(5000, "", summary=False)


def test_a_state_filter_pages_over_matching_nodes_and_unhealthy_gpus_are_counted(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path)
    for i in range(6):
        h.connect(f"n{i}", gpus=2)
    for name in ("n1", "n3", "n4"):
        h.s.model.nodes[name].connected = False
    h.s.gpus.drain("n0", 1, "root", "fan noise")

    names: list[str] = []
    token = ""
    while True:
        page = h.s.nodes.page(2, token, summary=False, states=("DOWN",))
        names += [node.name for node, _ in page.nodes]
        token = page.next_page_token
        if not token:
            break
    assert names == ["n1", "n3", "n4"]
    idle = h.s.nodes.page(0, "", summary=True, states=("IDLE", "MIXED"))
    assert [node.name for node, _ in idle.nodes] == ["n0", "n2", "n5"]
    assert idle.summary is not None and idle.summary.nodes == 6, "the summary counts all"
    assert idle.summary.gpus_unhealthy == 1
    assert idle.summary.gpus_free == 1 + 2 + 2  # n0's other GPU; the down nodes offer none
    with pytest.raises(UserError, match=r"states: 'ON FIRE', 'down' unknown; one of IDLE"):
        h.s.nodes.page(0, "", summary=False, states=("IDLE", "down", "ON FIRE"))


def test_many_unknown_states_are_named_briefly(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    junk = tuple(f"S{i}" * 100 for i in range(1000))
    with pytest.raises(UserError) as refused:
        h.s.nodes.page(0, "", summary=False, states=junk)
    message = str(refused.value)
    assert message.startswith("states: 'S0S0") and ", ...] unknown" not in message
    assert message.count("'") == 10 and ", ... unknown; one of IDLE" in message
    assert len(message) < 400


def test_a_large_page_is_built_in_hops_that_let_other_requests_in(tmp_path: Path) -> None:
    core = CountedExecutor()
    h = Harness(tmp_path, executor=core)
    count = NODES_PER_HOP * 4 + 30  # under the default page of 500
    names = [f"n{i:04d}" for i in range(count)]
    for name in names:
        h.connect(name, gpus=1)
    for name in names[::3]:
        h.s.model.nodes[name].connected = False  # DOWN: a third of them

    async def scenario() -> None:
        gate, blocked = busy_core(h)
        listing = asyncio.ensure_future(h.engine.nodes.list_nodes(0, "", True, False))
        await core.queued(2)  # its first hop waits for the core thread
        shown_when_asked = asyncio.ensure_future(h.engine.core.call(lambda: hops.count))
        await core.queued(3)
        gate.set()
        await blocked
        # the request queued behind the listing ran after its first hop, not after all
        assert await shown_when_asked == 1
        page = await listing
        assert [node.name for node, _ in page.nodes] == names and page.next_page_token == ""
        assert page.summary is not None and page.summary.states["DOWN"] == len(names[::3])
        down = await h.engine.nodes.list_nodes(NODES_PER_HOP + 5, "", False, False, ("DOWN",))
        assert [node.name for node, _ in down.nodes] == names[::3][: NODES_PER_HOP + 5]
        assert down.next_page_token == names[::3][NODES_PER_HOP + 4]

    class Hops:
        count = 0

    hops = Hops()
    page = h.s.nodes.page

    def counted(*args: object, **kwargs: object) -> object:
        hops.count += 1
        return page(*args, **kwargs)  # type: ignore[arg-type]

    h.s.nodes.page = counted  # type: ignore[method-assign]
    asyncio.run(scenario())
    assert hops.count == 5 + 2  # the default page in five hops, the DOWN page in two


def test_a_listed_node_shows_its_new_inventory_after_a_new_hello(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.connect("n1", gpus=2)
    parts = convert_nodes.NodeParts()  # what the servicer keeps across listings

    def listed() -> list[str]:
        (shown,) = h.s.nodes.page(0, "", summary=False).nodes
        msg = convert_nodes.node_to_pb(*shown, parts)
        assert [g.uuid for g in msg.inventory.gpus] == [g.info.uuid for g in msg.gpus]
        return [g.info.uuid for g in msg.gpus]

    assert listed() == ["GPU-0", "GPU-1"]
    assert listed() == ["GPU-0", "GPU-1"]
    h.connect("n1", gpus=4)  # the agent came back with more GPUs
    assert listed() == ["GPU-0", "GPU-1", "GPU-2", "GPU-3"]


def test_a_listed_node_shows_each_new_heartbeat_s_telemetry(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.connect("n1", gpus=2)
    parts = convert_nodes.NodeParts()

    def listed() -> list[tuple[float, int, str]]:
        (shown,) = h.s.nodes.page(0, "", summary=False).nodes
        reply = convert_nodes.node_page_to_pb([shown], "", parts)
        return [
            (g.telemetry.utilization, g.telemetry.memory_used, g.telemetry.error)
            for g in reply.nodes[0].gpus
        ]

    def beat(*gpus: GpuTelemetry) -> None:
        h.engine.steps.heartbeat("n1", h.sessions["n1"], Heartbeat(gpus=gpus))

    beat(GpuTelemetry(0, "GPU-0", utilization=10.0, memory_used=2**30), GpuTelemetry(1, "GPU-1"))
    assert listed() == [(10.0, 2**30, ""), (0.0, 0, "")]
    assert listed() == [(10.0, 2**30, ""), (0.0, 0, "")]  # served from the kept parts
    beat(GpuTelemetry(0, "GPU-0", utilization=97.0), GpuTelemetry(1, "GPU-1", error="GPU is lost"))
    assert listed() == [(97.0, 0, ""), (0.0, 0, "GPU is lost")]
