"""The dashboard page as a lab uses it, in a real browser (headless chromium) against a real
scheduler and two agents: the timeline's midnight lines fall on the browser's local midnights
(Los Angeles, Kolkata; also in a week with a DST change); an array's tasks are one row of the
queue, which unfolds and folds again, and "mine" hides it from another user; a running job's
bar names its user, in the group's colour for a member of its account; an idle page asks only
for changes and a hidden tab stops polling; the job's owner cancels it from its page, whose
output grows while a selection in it stays; a scheduler killed -9 leaves the data on screen
with "disconnected — retrying — last updated hh:mm", and once it is back the page goes on, its
login kept through a reload. A drained node's GPUs are grey on the timeline and the heat map,
and a user's booking there is refused with the reason; a member of an account books for the
account, moves the booking's end by dragging its edge, finds it in their read-only calendar
feed, and another member sees it as the group's; a half-filled booking form survives a reload;
an admin's DAILY booking from the page is in ``greserve list``; on a phone's 390 px the views
fit and two taps select a booking's GPUs and time; the bookings' CSV the page offers is
``greserve export --csv``'s and ``greserve import`` books it again."""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser import screenshot, wait_text, wait_until
from tests.cluster import TEST_IMAGE, Cluster, free_port
from tests.faults_support import restart_scheduler
from tests.test_e2e_web import log_in, log_out

SLEEPER = f"""
name: trainer
image: {TEST_IMAGE}
command: ["sh", "-c", "echo step 1; sleep 6; echo step 2; sleep 300"]
resources: {{gpus: 2}}
time_limit: 2h
"""


def start(cluster: Cluster) -> str:
    """A scheduler with the dashboard, agents n1 and n2 with 4 simulated GPUs each, and the
    users ann and bob (members of account physics); the page's base URL."""
    port = free_port()
    cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{port}")
    cluster.start_agent("n1", 4)
    cluster.start_agent("n2", 4)
    return f"http://127.0.0.1:{port}"


def add_member(cluster: Cluster, name: str) -> str:
    """User ``name`` of account physics (their default); their token."""
    from rota.scheduler.core.users import UsersService
    from rota.scheduler.store.store import Store

    store = Store(f"sqlite:///{cluster.root / 'sched.db'}")
    try:
        return UsersService(store.users, time.time).add(name, False, ("physics",), "physics")[1]
    finally:
        store.close()


def set_zone(drv: WebDriver, zone: str) -> None:
    drv.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": zone})


def ticks(drv: WebDriver, which: str, span: str) -> list[datetime]:
    """The times (UTC) of the timeline's header ticks ``which`` (CSS), once the ``span`` (day,
    week) view is drawn."""
    found = WebDriverWait(drv, 30).until(
        lambda d: d.execute_script(
            """const grid = document.getElementById("timeline");
            if (grid.dataset.to - grid.dataset.from < (arguments[1] === "week" ? 6 : 0.5) * 864e5) return null;
            const t = [...grid.querySelectorAll(".tl-tick" + arguments[0])].map((e) => e.dataset.t);
            return t.length ? t : null;""",
            which,
            span,
        )
    )
    return [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in found]


def dst_week(drv: WebDriver) -> list[datetime]:
    """The midnights the page's calendar module draws for the week of 2026-11-01 (a DST change
    in the US), in the browser's zone."""
    found = drv.execute_async_script(
        """const done = arguments[arguments.length - 1];
        import("/static/calendar.js").then((c) => {
          const [from, to] = c.viewBounds(Date.parse("2026-11-01T12:00:00Z"), "week", 1);
          done(c.midnights(from, to).map((t) => new Date(t).toISOString()));
        });"""
    )
    return [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in found]


def fill_booking(drv: WebDriver, fields: dict[str, str]) -> None:
    """Set the booking form's fields (ids without ``book-``) as typing would, and press Book."""
    drv.execute_script(
        """for (const [id, value] of Object.entries(arguments[0])) {
          const input = document.getElementById("book-" + id);
          input.value = value;
          input.dispatchEvent(new Event("input", {bubbles: true}));
        }""",
        fields,
    )
    drv.find_element(By.ID, "book-submit").click()


def tomorrow(zone: str, hour: int) -> str:
    """Tomorrow at ``hour`` in ``zone``, as a datetime-local input takes it."""
    day = datetime.now(ZoneInfo(zone)) + timedelta(days=1)
    return day.replace(hour=hour, minute=0, second=0, microsecond=0).strftime("%Y-%m-%dT%H:%M")


def test_local_time_who_holds_what_and_cancel_from_the_page(
    cluster: Cluster, browser: WebDriver, tmp_path: Path
) -> None:
    base = start(cluster)
    ann = add_member(cluster, "ann")
    bob = add_member(cluster, "bob")
    job = cluster.cli("gsub", "--parsable", str(cluster.write_job("t.yaml", SLEEPER)), token=ann)
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip()
    cluster.wait_state(job_id, "RUNNING", timeout=90)
    sweep = SLEEPER.replace("gpus: 2", "gpus: 4") + "array: 0-2\n"
    array = cluster.cli("gsub", "--parsable", str(cluster.write_job("a.yaml", sweep)), token=ann)
    assert array.returncode == 0, array.stderr
    array_id = array.stdout.strip().split("_")[0]

    for zone in ("America/Los_Angeles", "Asia/Kolkata"):
        set_zone(browser, zone)
        log_in(browser, base, bob)
        browser.get(base + "/#timeline")
        wait_text(browser, "#tl-range", zone.split("/")[0])  # Chrome names Kolkata Calcutta
        hours = ticks(browser, ":not(.midnight)", "day")
        local = [t.astimezone(ZoneInfo(zone)) for t in hours]
        assert all(t.minute == 0 and t.hour % 2 == 0 for t in local), local
        browser.find_element(By.ID, "tl-week").click()
        midnights = ticks(browser, ".midnight", "week")
        local = [t.astimezone(ZoneInfo(zone)) for t in midnights]
        assert len(local) == 7 and all((t.hour, t.minute) == (0, 0) for t in local), local
        assert local[0].weekday() == 0, "weeks start on Monday"
        browser.find_element(By.ID, "tl-day").click()
        week = dst_week(browser)  # the week in which Los Angeles leaves summer time
        local = [t.astimezone(ZoneInfo(zone)) for t in week]
        assert len(local) == 7 and all((t.hour, t.minute) == (0, 0) for t in local), local
        log_out(browser)

    log_in(browser, base, bob)
    browser.get(base + "/#queue")  # an array's tasks are one row, unfolded and folded again
    folded = f'#queue-table tr[data-array="{array_id}"]'
    assert f"{array_id}_[0-2]" in wait_text(browser, folded, "3 tasks")
    wait_until(browser, folded + " .unfold").click()
    wait_until(browser, f'#queue-table tr[data-job="{array_id}_2"]')
    wait_until(browser, f'#queue-table tr[data-job="{array_id}_0"] .fold').click()
    wait_until(browser, folded)
    browser.find_element(By.ID, "f-mine").click()  # "mine": bob has no jobs
    WebDriverWait(browser, 10).until(lambda d: not d.find_elements(By.CSS_SELECTOR, folded))
    browser.find_element(By.ID, "f-mine").click()
    wait_until(browser, folded)
    browser.get(base + "/#timeline")
    bar = f'#timeline .tl-bar.job[data-job="{job_id}"]'
    assert f"ann · {job_id}" in wait_text(browser, bar, "ann")
    assert "group" in (browser.find_element(By.CSS_SELECTOR, bar).get_attribute("class") or "")
    # an idle page asks for what changed since its last answer only (the bytes that saves at
    # 500 nodes: tests/test_web_idle_bytes.py); a hidden tab stops asking
    browser.execute_script("performance.clearResourceTimings()")
    polls = """return performance.getEntriesByType('resource').map(e => e.name)
      .filter(n => n.includes('/api/v1/'))"""
    # the page's requests are counted from now on, each one under way until its body is read
    browser.execute_script(
        """const real = window.fetch;
        window.asking = 0;
        window.asked = 0;
        window.fetch = async (...args) => {
          window.asking++;
          window.asked++;
          try {
            const res = await real(...args);
            await res.clone().arrayBuffer();
            return res;
          } finally {
            window.asking--;
          }
        };"""
    )
    asked = WebDriverWait(browser, 30).until(
        lambda d: len(d.execute_script(polls)) >= 6 and d.execute_script(polls)
    )
    assert all("since=" in n and not n.endswith("since=0") for n in asked), asked
    browser.execute_script(
        """Object.defineProperty(document, 'hidden', {get: () => true, configurable: true});
        document.dispatchEvent(new Event('visibilitychange'));"""
    )
    # a poll under way when the tab was hidden still ends (a loaded machine may take seconds)
    WebDriverWait(browser, 60).until(
        lambda d: (
            d.execute_script("return window.asking") == 0
            and len(d.execute_script(polls)) >= d.execute_script("return window.asked")
        )
    )
    hidden_at = len(browser.execute_script(polls))
    time.sleep(5)  # two poll periods
    assert len(browser.execute_script(polls)) == hidden_at, "a hidden tab does not poll"
    browser.execute_script(
        """Object.defineProperty(document, 'hidden', {get: () => false, configurable: true});
        document.dispatchEvent(new Event('visibilitychange'));"""
    )
    for _ in range(5):  # a tap on the bar pins its card (a refresh may replace the bar first)
        try:
            browser.find_element(By.CSS_SELECTOR, bar).click()
            break
        except StaleElementReferenceException:
            continue
    card = wait_text(browser, "#tl-card", f"job {job_id}")
    assert "User\nann" in card and "Account\nphysics" in card, card
    screenshot(browser, tmp_path, "timeline-who", for_docs=True)
    browser.get(f"{base}/#job/{job_id}")
    wait_text(browser, "#job-fields", "RUNNING")
    assert not browser.find_elements(By.CSS_SELECTOR, "#job-actions button"), "not bob's job"
    log_out(browser)

    log_in(browser, base, ann)
    browser.get(f"{base}/#job/{job_id}")
    fields = wait_text(browser, "#job-fields", TEST_IMAGE)
    assert "Time limit\n02:00:00" in fields and "Elapsed" in fields, fields
    wait_text(browser, "#job-log", "step 1")
    select_log = "const r = document.createRange(); r.selectNodeContents(document.getElementById('job-log'));"
    browser.execute_script(
        select_log + "getSelection().removeAllRanges(); getSelection().addRange(r);"
    )
    wait_text(browser, "#job-log", "step 2")  # appended while "step 1" stays selected
    assert "step 1" in browser.execute_script("return getSelection().toString()"), "selection kept"
    wait_until(browser, "#job-actions .cancel-job").click()
    wait_until(browser, "#job-actions .yes").click()
    wait_text(browser, "#job-action-result", "cancel: done")
    assert cluster.wait_state(job_id, "CANCELLED", timeout=60)["state"] == "CANCELLED"

    wait_text(browser, "#job-fields", "CANCELLED")
    cluster.kill("scheduler")
    line = wait_text(browser, "#conn", "disconnected — retrying — last updated")
    assert browser.find_element(By.ID, "job-fields").is_displayed(), line
    assert "CANCELLED" in browser.find_element(By.ID, "job-fields").text, "the data is kept"

    # the scheduler was killed -9: back on the same port, the page goes on, still logged in
    restart_scheduler(cluster, "--open-registration", "--http-listen", base.split("//")[1])
    WebDriverWait(browser, 45).until(
        lambda d: not d.find_element(By.ID, "conn").is_displayed(), "the page reconnected"
    )
    browser.refresh()
    assert wait_text(browser, "#user-name", "ann")
    assert not browser.find_element(By.ID, "login-token").is_displayed(), "not logged out"


def test_drained_grey_account_booking_and_daily_from_the_page(
    cluster: Cluster, browser: WebDriver, tmp_path: Path
) -> None:
    base = start(cluster)
    ann = add_member(cluster, "ann")
    bob = add_member(cluster, "bob")
    n1, n2 = cluster.node_name("n1"), cluster.node_name("n2")
    cluster.cli("gadmin", "node", "drain", n2, "--reason", "fan broken", check=True)
    zone = "Europe/Berlin"
    set_zone(browser, zone)

    log_in(browser, base, ann)
    browser.get(base + "/#timeline")
    wait_until(browser, f'#timeline .tl-track.unavail[data-node="{n2}"][data-index="3"]')
    assert not browser.find_elements(By.CSS_SELECTOR, f'.tl-track.unavail[data-node="{n1}"]')
    fill_booking(
        browser,
        {
            "name": "on-drained",
            "gpus": f"{n2}:0",
            "start": tomorrow(zone, 9),
            "end": tomorrow(zone, 11),
        },
    )
    refused = wait_text(browser, "#book-result", n2)
    assert "DRAINED" in refused or "drain" in refused, refused
    browser.get(base + "/#gpus")
    wait_until(browser, f'[data-gpu="{n2}:0"][data-kind="unavail"]')
    assert (
        browser.find_element(By.CSS_SELECTOR, f'[data-gpu="{n1}:0"]').get_attribute("data-kind")
        == "free"
    )

    browser.get(base + "/#timeline")
    wait_until(browser, "#book-for option[value='account:physics']")
    fill_booking(
        browser,
        {
            "name": "physics-run",
            "gpus": f"{n1}:0,1",
            "start": tomorrow(zone, 9),
            "end": tomorrow(zone, 12),
            "for": "account:physics",
        },
    )
    assert wait_text(browser, "#book-result", "booked") == "booked physics-run"
    wait_until(browser, "#tl-next").click()
    drag_edge(
        browser, f'.tl-track[data-node="{n1}"][data-index="0"] .tl-bar[data-resv="physics-run"]'
    )
    assert wait_text(browser, "#book-result", "changed").startswith("changed physics-run")
    shown = cluster.cli("greserve", "show", "physics-run", "--json", token=ann)
    end = datetime.fromisoformat(json.loads(shown.stdout)["end"].replace("Z", "+00:00"))
    assert end.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%dT%H:%M") == tomorrow(zone, 13)
    feed = wait_until(browser, "#ical-link").get_attribute("href") or ""
    with urllib.request.urlopen(feed, timeout=30) as answer:  # a calendar program: no cookie
        assert "SUMMARY:physics-run: 2 GPU(s) for account physics" in answer.read().decode()
    log_out(browser)

    log_in(browser, base, bob)
    browser.get(base + "/#timeline")
    wait_until(browser, "#tl-next").click()
    bar = '#timeline .tl-bar.resv.group[data-resv="physics-run"]'
    assert "group physics · physics-run" in wait_text(browser, bar, "physics")
    for _ in range(5):  # a pinned booking card adds its GPU-hours (a refresh may replace the bar)
        try:
            browser.find_element(By.CSS_SELECTOR, bar).click()
            break
        except StaleElementReferenceException:
            continue
    card = wait_text(browser, "#tl-card", "GPU-hours: booked")
    assert "If unused\nlent to the queue" in card and "released 0.0" in card, card
    repeat = browser.find_element(By.ID, "book-repeat")
    assert repeat.is_enabled(), "users may repeat by default (reservations.users_may_repeat)"
    screenshot(browser, tmp_path, "timeline-group")
    log_out(browser)

    log_in(browser, base, cluster.token)
    browser.get(base + "/#timeline")
    wait_until(browser, "#book-gpus").send_keys(f"{n1}:3")
    browser.refresh()  # a half-filled form survives a reload
    assert wait_until(browser, "#book-gpus").get_attribute("value") == f"{n1}:3"
    fill_booking(
        browser,
        {
            "name": "standup-gpus",
            "gpus": f"{n1}:3",
            "start": tomorrow(zone, 13),
            "end": tomorrow(zone, 14),
            "repeat": "DAILY",
        },
    )
    assert wait_text(browser, "#book-result", "booked") == "booked standup-gpus"
    listed = cluster.cli("greserve", "list", check=True).stdout
    row = next(line for line in listed.splitlines() if line.startswith("standup-gpus"))
    assert "DAILY" in row, listed
    browser.find_element(By.ID, "tl-week").click()
    wait_until(browser, "#tl-next").click()
    bars = '#timeline .tl-bar[data-resv="standup-gpus"]'
    # this week's bars stay until next week's listing arrives (on a Friday: 2 of them)
    WebDriverWait(browser, 30).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, bars)) >= 7,
        "a daily booking has a window every day of next week",
    )

    browser.set_window_size(390, 844)  # a phone
    for view, shown in (
        ("overview", "#nodes-table tbody tr"),
        ("queue", "#queue-table"),
        ("gpus", ".gpu-cell"),
        ("accounting", "#acct-efficiency"),
    ):
        browser.get(f"{base}/#{view}")
        wait_until(browser, shown)
        wide = browser.execute_script("return document.documentElement.scrollWidth")
        assert wide <= 390, f"{view} is {wide} px wide"
    browser.get(base + "/#timeline")
    wait_until(browser, "#tl-day").click()
    wait_until(browser, "#tl-tap").click()
    tap(browser, n1, 1, 0.4)
    tap(browser, n1, 2, 0.6)
    assert wait_until(browser, "#book-gpus").get_attribute("value") == f"{n1}:1,2"
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
    screenshot(browser, tmp_path, "phone-timeline")

    # the bookings view's CSV is greserve export --csv's, and greserve import books it again
    link = wait_until(browser, "#resv-csv")
    sheet = browser.execute_async_script(
        "fetch(arguments[0]).then(r => r.text()).then(arguments[1])", link.get_attribute("href")
    )
    assert sheet == cluster.cli("greserve", "export", "--csv", check=True).stdout
    before = cluster.cli("greserve", "list", check=True).stdout
    assert "physics-run" in sheet and "standup-gpus" in sheet, sheet
    cluster.cli("greserve", "delete", "physics-run", check=True)
    cluster.cli("greserve", "delete", "standup-gpus", check=True)
    (tmp_path / "bookings.csv").write_text(sheet)
    cluster.cli("greserve", "import", str(tmp_path / "bookings.csv"), check=True)
    assert cluster.cli("greserve", "list", check=True).stdout == before


def drag_edge(drv: WebDriver, bar: str) -> None:
    """Drag the right edge of the booking bar ``bar`` (CSS in the grid) one hour later (a day
    view), retrying when a refresh replaced the bar before the drag began."""
    for _ in range(5):
        try:
            edge = wait_until(drv, f"#timeline {bar} .tl-edge.r")
            hour = drv.execute_script(
                "return arguments[0].parentElement.parentElement.getBoundingClientRect().width / 24",
                edge,
            )
            chain = ActionChains(drv).click_and_hold(edge)
            chain.move_by_offset(int(hour / 2), 0).move_by_offset(
                int(hour / 2), 0
            ).release().perform()
            return
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"{bar} kept being redrawn")


def tap(drv: WebDriver, node: str, index: int, frac: float) -> None:
    """Tap (click) GPU ``index``'s row at ``frac`` of the view's width."""
    grid = drv.find_element(By.ID, "timeline")
    box = drv.execute_script(
        """const [grid, node, i] = arguments;
        const track = grid.querySelector(`.tl-track[data-node="${node}"][data-index="${i}"]`);
        track.scrollIntoView({block: "center"});
        const g = grid.getBoundingClientRect(), r = track.getBoundingClientRect();
        return {x: r.left + arguments[3] * r.width - (g.left + g.width / 2),
          y: r.top + r.height / 2 - (g.top + g.height / 2)};""",
        grid,
        node,
        index,
        frac,
    )
    ActionChains(drv).move_to_element_with_offset(
        grid, int(box["x"]), int(box["y"])
    ).click().perform()
