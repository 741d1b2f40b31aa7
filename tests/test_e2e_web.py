"""The dashboard in a real browser (headless chromium) against a real scheduler and agent on
the fake NVML library: log in, see the node and its GPUs, watch a submitted job appear, run,
show its output and finish; book GPUs by dragging on the timeline and find the booking in
`greserve list`; another user cannot read that output, their selection over the same GPUs
turns red against the booking, and their booking of them is refused with greserve's reason. Screenshots go to the test's directory (and, with
ROTA_DOCS_SCREENSHOTS=1, the overview and the timeline into docs/img for the README)."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import screenshot, wait_cells, wait_text, wait_until
from tests.cluster import TEST_IMAGE, Cluster, free_port
from tests.gpu_e2e import GpuCluster
from tests.nvml_fake import GiB, fake_gpu

JOB = f"""
name: web-demo
image: {TEST_IMAGE}
command: ["sh", "-c", "echo hello from the dashboard; until [ -e /gate/go ]; do sleep 0.1; done; echo done"]
resources: {{gpus: 1}}
time_limit: 10m
mounts: ['{{gate}}:/gate:ro']
"""


@pytest.fixture
def gc(cluster: Cluster, fake_nvml_lib: Path) -> GpuCluster:
    return GpuCluster(cluster, fake_nvml_lib)


def log_in(drv: WebDriver, base: str, token: str) -> None:
    drv.get(base + "/")
    field = wait_until(drv, "#login-token")
    field.clear()
    field.send_keys(token)
    drv.find_element(By.ID, "login-submit").click()
    wait_until(drv, "#whoami")


def log_out(drv: WebDriver) -> None:
    drv.find_element(By.ID, "logout").click()
    wait_until(drv, "#login-token")


def drag_rows(drv: WebDriver, node: str, first: int, last: int, start: float, end: float) -> None:
    """Drag on the timeline from GPU ``first`` at ``start`` (a fraction of the view's width)
    to GPU ``last`` at ``end``. Offsets are taken from the grid element, which the page keeps
    while it redraws the rows inside it on every poll."""
    wait_until(drv, f'#timeline .tl-track[data-node="{node}"][data-index="{last}"]')
    grid = drv.find_element(By.ID, "timeline")
    box = drv.execute_script(
        """const [grid, node, a, b] = arguments;
        const g = grid.getBoundingClientRect();
        const row = (i) => grid.querySelector(
          `.tl-track[data-node="${node}"][data-index="${i}"]`).getBoundingClientRect();
        const ra = row(a), rb = row(b);
        return {gx: g.left + g.width / 2, gy: g.top + g.height / 2, left: ra.left,
          width: ra.width, ya: ra.top + ra.height / 2, yb: rb.top + rb.height / 2};""",
        grid,
        node,
        first,
        last,
    )

    def at(frac: float, y: float) -> tuple[int, int]:
        return int(box["left"] + frac * box["width"] - box["gx"]), int(y - box["gy"])

    chain = ActionChains(drv)
    chain.move_to_element_with_offset(grid, *at(start, box["ya"])).click_and_hold()
    chain.move_to_element_with_offset(grid, *at((start + end) / 2, box["yb"]))
    chain.move_to_element_with_offset(grid, *at(end, box["yb"])).release().perform()


def book_by_dragging(drv: WebDriver, base: str, node: str, name: str, expect: str) -> str:
    """Drag over GPUs 1-2 from about 12 to 15.5 hours into tomorrow's day view, name the
    booking and press Book; the result line once it shows ``expect``."""
    drv.get(base + "/#timeline")
    wait_until(drv, "#tl-now").click()
    drv.find_element(By.ID, "tl-next").click()
    drag_rows(drv, node, 1, 2, 0.5, 0.65)
    assert wait_until(drv, "#book-gpus").get_attribute("value") == f"{node}:1,2"
    field = drv.find_element(By.ID, "book-name")
    field.clear()
    field.send_keys(name)
    drv.find_element(By.ID, "book-submit").click()
    return wait_text(drv, "#book-result", expect)


def test_log_in_see_gpus_follow_a_job_and_keep_output_private(
    gc: GpuCluster, browser: WebDriver, tmp_path: Path
) -> None:
    port = free_port()
    gc.start(
        [
            fake_gpu(0, utilization=87, memory_used=30 * GiB, temperature=71),
            fake_gpu(1, utilization=0),
            fake_gpu(
                2,
                utilization=35,
                memory_used=9 * GiB,
                processes=[{"pid": 4_000_042, "used_memory": 2 * GiB}],
            ),
            fake_gpu(3, utilization=0),
        ],
        http_listen=f"127.0.0.1:{port}",
        allowed_mounts=[str(gc.c.root)],
    )
    base = f"http://127.0.0.1:{port}"
    node = gc.node_name
    ann = gc.c.add_user("ann")
    gate = gc.c.root / "gate"  # the job runs until the page was seen following it
    gate.mkdir(mode=0o755)
    bob = gc.c.add_user("bob")

    browser.get(base + "/")
    wait_until(browser, "#login-token").send_keys("not-a-token")
    browser.find_element(By.ID, "login-submit").click()
    wait_text(browser, "#error", "not a current rota token")

    log_in(browser, base, ann)
    wait_text(browser, "#user-name", "ann")
    cells = wait_cells(browser, "#nodes-table tbody tr", node)
    assert cells[1] == "IDLE" and cells[3] == "4", cells  # state, total GPUs

    browser.get(base + "/#gpus")
    hot = wait_text(browser, f'[data-gpu="{node}:0"]', "87%")
    assert "71 °C" in hot and "30.0 GiB / 80.0 GiB" in hot
    wait_text(browser, f'[data-gpu="{node}:2"]', "foreign pid 4000042")
    screenshot(browser, tmp_path, "heatmap")

    demo = gc.c.write_job("demo.yaml", JOB.replace("{gate}", str(gate)))
    job = gc.c.cli("gsub", "--parsable", str(demo), token=ann)
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip()
    browser.get(base + "/#queue")
    queued = wait_text(browser, f'#queue-table tr[data-job="{job_id}"]', "RUNNING", 90)
    assert "ann" in queued and "web-demo" in queued
    browser.get(base + "/#overview")
    wait_text(browser, "#nodes-table tbody tr", "MIXED", 30)
    screenshot(browser, tmp_path, "overview", for_docs=True)

    browser.get(f"{base}/#job/{job_id}")
    wait_text(browser, "#job-log", "hello from the dashboard", 60)
    (gate / "go").write_text("")
    wait_text(browser, "#job-fields", "COMPLETED", 90)
    wait_text(browser, "#job-log", "done", 30)
    wait_text(browser, "#job-events", "RUNNING → COMPLETED")
    screenshot(browser, tmp_path, "job")
    browser.get(base + "/#queue")
    wait_text(browser, f'#ended-table tr[data-job="{job_id}"]', "COMPLETED")

    assert book_by_dragging(browser, base, node, "ann-sweep", "booked") == "booked ann-sweep"
    wait_text(browser, '#timeline .tl-bar.resv.mine[data-resv="ann-sweep"]', "ann-sweep")
    cells = wait_cells(browser, "#resv-table tbody tr", "ann-sweep")
    assert cells[1] == "ann" and cells[2] == "ann" and cells[5] == f"{node}:1,2", cells
    screenshot(browser, tmp_path, "timeline", for_docs=True)
    listed = gc.c.cli("greserve", "list", token=ann)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if line.startswith("ann-sweep"))
    assert f"{node}:1,2" in row, listed.stdout

    log_out(browser)
    log_in(browser, base, bob)
    browser.get(f"{base}/#job/{job_id}")
    wait_text(browser, "#job-log-state", "only ann or an admin")
    assert browser.find_element(By.ID, "job-log").text == ""
    screenshot(browser, tmp_path, "private-log")

    refused = book_by_dragging(browser, base, node, "bob-sweep", "reserved by")
    assert refused == "start/end: its GPUs are reserved by ann-sweep then", refused
    # the selection (kept after the drag) is red where it meets ann's booking, outlined red
    wait_until(browser, "#timeline .tl-select.conflict")
    wait_until(browser, '#timeline .tl-bar.conflict[data-resv="ann-sweep"]')
    assert "bad" in (browser.find_element(By.ID, "book-result").get_attribute("class") or "")
    cells = wait_cells(browser, "#resv-table tbody tr", "ann-sweep")
    assert cells[-1] == "", "no Cancel button on another user's booking"
    screenshot(browser, tmp_path, "refused-booking")
    assert len(list(tmp_path.glob("*.png"))) == 6
