"""ListNodes in pages with a summary over every node (issue 14 item 4), on the real services."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.scheduler.core.errors import UserError
from tests.support.core import Harness


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
