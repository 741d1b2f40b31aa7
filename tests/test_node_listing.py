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
