"""A real browser for the dashboard tests: Debian's chromium, headless, driven by selenium
through the system chromedriver (no browser can be downloaded here)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = ("chromium", "chromium-browser")
DOCS_IMG = Path(__file__).resolve().parent.parent / "docs" / "img"


def _found(names: tuple[str, ...]) -> str:
    return next((p for n in names if (p := shutil.which(n))), "")


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    """Headless chromium; skipped outside CI when it is not installed (CI installs it)."""
    yield from _chromium(tmp_path, False)


@pytest.fixture
def network_browser(tmp_path: Path) -> Iterator[WebDriver]:
    """``browser`` that also logs the DevTools Protocol's network events, read with
    ``get_log("performance")`` (each read takes the events logged since the last)."""
    yield from _chromium(tmp_path, True)


@pytest.fixture
def named_browser(tmp_path: Path) -> Iterator[WebDriver]:
    """``browser`` that reaches 127.0.0.1 as ``http://sched.test:PORT``: a plain-HTTP origin
    that is not loopback to it, as a lab's scheduler served with ``--insecure`` (no
    ``Sec-Fetch-*`` headers, no secure context)."""
    yield from _chromium(tmp_path, False, ("--host-resolver-rules=MAP sched.test 127.0.0.1",))


def _chromium(
    tmp_path: Path, network_log: bool, extra: tuple[str, ...] = ()
) -> Iterator[WebDriver]:
    binary, driver = _found(CHROMIUM), _found(("chromedriver",))
    if not binary or not driver:
        if os.environ.get("CI"):
            pytest.fail("chromium and chromedriver are needed in CI; .ci/run installs them")
        pytest.skip("no chromium/chromedriver (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",  # tests run as root in containers
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,900",
        f"--user-data-dir={tmp_path / 'chromium'}",
        *extra,
    ):
        options.add_argument(arg)
    if network_log:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    drv = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield drv
    finally:
        drv.quit()


def _wait(drv: WebDriver, timeout: float) -> WebDriverWait[WebDriver]:
    """A wait that retries when the page re-rendered what it was reading (the dashboard
    replaces its tables on every refresh)."""
    return WebDriverWait(
        drv, timeout, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,)
    )


def wait_until(drv: WebDriver, what: str, timeout: float = 30.0) -> WebElement:
    """The first element ``what`` (CSS) once it is displayed (for elements the page does not
    re-render: inputs, buttons)."""

    def shown(d: WebDriver) -> WebElement | Literal[False]:
        return next((e for e in d.find_elements(By.CSS_SELECTOR, what) if e.is_displayed()), False)

    return _wait(drv, timeout).until(shown, f"nothing shown for {what}")


def wait_text(drv: WebDriver, what: str, text: str, timeout: float = 45.0) -> str:
    """The text of the first displayed element ``what`` once it contains ``text``."""
    return str(
        _wait(drv, timeout).until(
            lambda d: next(
                (
                    shown
                    for e in d.find_elements(By.CSS_SELECTOR, what)
                    if text in (shown := e.text) and e.is_displayed()
                ),
                False,
            ),
            f"{what} never showed {text!r}",
        )
    )


def wait_cells(drv: WebDriver, row: str, text: str, timeout: float = 45.0) -> list[str]:
    """The cell texts of the first table row ``row`` (CSS) whose text contains ``text``."""
    found: list[str] = _wait(drv, timeout).until(
        lambda d: next(
            (
                [c.text for c in r.find_elements(By.TAG_NAME, "td")]
                for r in d.find_elements(By.CSS_SELECTOR, row)
                if text in r.text
            ),
            False,
        ),
        f"no {row} showed {text!r}",
    )
    return found


def screenshot(drv: WebDriver, tmp_path: Path, name: str, for_docs: bool = False) -> Path:
    """Save a PNG under the test's directory; with ``ROTA_DOCS_SCREENSHOTS=1`` in the
    environment, ``for_docs`` ones also into docs/img for the README."""
    path = tmp_path / f"{name}.png"
    assert drv.save_screenshot(str(path)), f"screenshot {name} failed"
    if for_docs and os.environ.get("ROTA_DOCS_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS_IMG / f"{name}.png")
    return path
