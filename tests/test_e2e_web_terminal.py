"""Issue 25 item 4 in a real browser (headless chromium) against a real scheduler, agent and
Docker container: the job's owner opens its terminal on the job's page and runs a command in
it, and opens the job's web port (busybox httpd inside the job), which the dashboard sends on
to the ports origin (another port) with a ticket; another user is refused both (403); every
entry is recorded in the job's events and the audit log. A
session started from the queue page's form opens its own terminal once it runs, and exiting
its shell ends the job with the shell's exit code."""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
from urllib.parse import urlsplit

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser import wait_text, wait_until
from tests.cluster import TEST_IMAGE, Cluster, free_port
from tests.test_e2e_attach_forward import start_servers
from tests.test_e2e_web import log_in

JSON = "application/json"


def cookie_of(port: int, token: str) -> str:
    """A login's session cookie (``name=value``)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"token": token})
    conn.request("POST", "/api/v1/login", body, {"Content-Type": "application/json"})
    answer = conn.getresponse()
    answer.read()
    assert answer.status == 200
    return answer.getheader("Set-Cookie", "").split(";")[0]


def start_session(port: int, token: str, body: dict[str, object]) -> tuple[int, str]:
    """POST /api/v1/interactive as ``token``'s browser login: the status and the answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/api/v1/login", json.dumps({"token": token}), {"Content-Type": JSON})
    login = conn.getresponse()
    csrf = json.loads(login.read())["csrf"]
    headers = {
        "Cookie": str(login.getheader("Set-Cookie")).split(";")[0],
        "X-CSRF-Token": csrf,
        "Content-Type": JSON,
    }
    conn.request("POST", "/api/v1/interactive", json.dumps(body), headers)
    answer = conn.getresponse()
    return answer.status, answer.read().decode()


def status_of(port: int, path: str, headers: dict[str, str]) -> int:
    return answer_of(port, path, headers).status


def answer_of(port: int, path: str, headers: dict[str, str]) -> http.client.HTTPResponse:
    """A GET's answer (read)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers=headers)
    answer = conn.getresponse()
    answer.read()
    return answer


def ticket_url(port: int, path: str, cookie: str) -> str:
    """Where the dashboard on ``port`` sends a login (its ``cookie``) asking for a job's web
    port at ``path``: the ports origin's URL with a ticket."""
    typed = {"Sec-Fetch-Site": "none"}  # as a browser's address bar
    answer = answer_of(port, path, {"Cookie": cookie, "Host": f"127.0.0.1:{port}", **typed})
    assert answer.status == 303, answer.status
    return str(answer.getheader("Location"))


def grant_of(url: str) -> str:
    """The ports origin's cookie (``name=value``) for a ticket's ``url``."""
    where = urlsplit(url)
    answer = answer_of(int(where.port or 80), f"{where.path}?{where.query}", {})
    assert answer.status == 303, answer.status
    return str(answer.getheader("Set-Cookie")).split(";")[0]


def start(cluster: Cluster) -> int:
    """A scheduler with the dashboard and one agent (one GPU); the HTTP port."""
    port = free_port()
    cluster.start_scheduler(
        "--open-registration",
        "--allowed-mount",
        str(cluster.root),
        "--http-listen",
        f"127.0.0.1:{port}",
    )
    cluster.start_agent("n1", gpus=1)
    return port


def test_owner_uses_terminal_and_web_port_other_user_refused(
    cluster: Cluster, browser: WebDriver
) -> None:
    port = start(cluster)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    job_id = start_servers(cluster, {"ROTA_TOKEN": alice})
    base = f"http://127.0.0.1:{port}"

    log_in(browser, base, alice)
    browser.get(f"{base}/#job/{job_id}")
    wait_until(browser, "#terminal-open").click()
    wait_text(browser, "#terminal-state", "on n1")
    wait_until(browser, "#terminal .xterm-rows")
    keys = browser.find_element(By.CSS_SELECTOR, "#terminal .xterm-helper-textarea")
    keys.send_keys("echo hello-$((6*7))\n")
    wait_text(browser, "#terminal .xterm-rows", "hello-42")
    before = wait_until(browser, "#terminal").get_attribute("data-size")
    browser.set_window_size(900, 700)  # the terminal follows the window, and so does the shell
    box = wait_until(browser, "#terminal")
    WebDriverWait(browser, 30).until(lambda _: box.get_attribute("data-size") != before)
    rows, cols = str(box.get_attribute("data-size")).split("x")
    keys.send_keys("stty size\n")
    wait_text(browser, "#terminal .xterm-rows", f"{rows} {cols}")

    ports = f"http://127.0.0.1:{cluster.ports_port}"
    wait_until(browser, "#web-port").send_keys("8080")  # the page's own link, in a new tab
    wait_until(browser, "#web-port-open").click()
    WebDriverWait(browser, 30).until(lambda d: len(d.window_handles) == 2)
    browser.switch_to.window(browser.window_handles[1])
    wait_text(browser, "body", "hello from inside the job")
    assert browser.current_url == f"{ports}/jobs/{job_id}/port/8080/"
    browser.close()
    browser.switch_to.window(browser.window_handles[0])
    browser.get(f"{base}/jobs/{job_id}/port/8080/index.html")
    wait_text(browser, "body", "hello from inside the job")
    assert browser.current_url == f"{ports}/jobs/{job_id}/port/8080/index.html"  # no ticket
    browser.get(f"{base}/jobs/{job_id}/port/8080")  # the slash is added
    wait_text(browser, "body", "hello from inside the job")
    assert browser.current_url == f"{ports}/jobs/{job_id}/port/8080/"

    # the whole path, for an app told its base (Jupyter's --ServerApp.base_url)
    under = cluster.root / "www" / "jobs" / job_id / "app" / "8080"
    under.mkdir(mode=0o755, parents=True)
    for folder in (under, *under.parents[:3]):
        folder.chmod(0o755)
    (under / "index.html").write_text("the app's own base\n")
    browser.get(f"{base}/jobs/{job_id}/app/8080/index.html")
    wait_text(browser, "body", "the app's own base")
    assert browser.current_url.startswith(f"{ports}/jobs/{job_id}/app/8080/")

    theirs = {"Cookie": cookie_of(port, bob), "Origin": base, "Host": f"127.0.0.1:{port}"}
    assert status_of(port, f"/jobs/{job_id}/port/8080/index.html", theirs) == 403
    handshake = {
        **theirs,
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
    }
    assert status_of(port, f"/api/v1/jobs/{job_id}/terminal", handshake) == 403
    mine = {"Cookie": cookie_of(port, alice), "Host": f"127.0.0.1:{port}"}
    foreign = {**handshake, **mine, "Origin": "http://evil.example"}
    assert status_of(port, f"/api/v1/jobs/{job_id}/terminal", foreign) == 403
    assert status_of(port, f"/jobs/{job_id}/port/8080/", {}) == 401

    # an upgraded connection passes through both ways (nc -e cat on 7000 echoes), and the
    # app never sees rota's cookies (the dashboard's, sent to every port of the host, and the
    # ports origin's own)
    grant = grant_of(ticket_url(port, f"/jobs/{job_id}/port/7000/ws?x=1", mine["Cookie"]))
    with socket.create_connection(("127.0.0.1", cluster.ports_port), timeout=30) as conn:
        conn.sendall(
            (
                f"GET /jobs/{job_id}/port/7000/ws?x=1 HTTP/1.1\r\n"
                f"Host: 127.0.0.1:{cluster.ports_port}\r\n"
                f"Cookie: {mine['Cookie']}; {grant}; theme=dark\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\n\r\n"
            ).encode()
        )
        echoed = b""
        while not echoed.endswith(b"\r\n\r\n"):
            echoed += conn.recv(4096)
        assert echoed.startswith(b"GET /ws?x=1 HTTP/1.1\r\n")
        assert b"upgrade: websocket" in echoed and b"cookie: theme=dark" in echoed
        assert b"rota_session" not in echoed and b"rota_port" not in echoed
        conn.sendall(b"both ways")
        assert conn.recv(4096) == b"both ways"

    shown = cluster.cli("gcontrol", "show", "job", job_id, check=True).stdout
    assert "gattach by alice on n1" in shown and "port forward by alice on n1" in shown
    audit = cluster.cli("gadmin", "audit", check=True).stdout
    assert "Interact/exec" in audit and "Interact/forward" in audit
    refused = [line for line in audit.splitlines() if "bob" in line]
    assert len(refused) >= 2 and "PERMISSION_DENIED" in " ".join(refused)


def test_session_started_from_the_page_opens_its_terminal(
    cluster: Cluster, browser: WebDriver
) -> None:
    port = start(cluster)
    alice = cluster.add_user("alice")
    log_in(browser, f"http://127.0.0.1:{port}", alice)
    browser.get(f"http://127.0.0.1:{port}/#queue")
    wait_until(browser, "#launch summary").click()
    wait_until(browser, "#launch-image").send_keys(TEST_IMAGE)
    wait_until(browser, "#launch-time").send_keys("30m")
    browser.find_element(By.ID, "launch-submit").click()
    wait_text(browser, "#terminal-state", "on n1", timeout=90)  # opened by itself
    keys = browser.find_element(By.CSS_SELECTOR, "#terminal .xterm-helper-textarea")
    keys.send_keys("echo hello-$((6*7))\n")
    wait_text(browser, "#terminal .xterm-rows", "hello-42")
    keys.send_keys("exit 3\n")
    wait_text(browser, "#terminal-state", "exit code 3")
    job_id = browser.find_element(By.ID, "job-id").text
    cluster.wait_state(job_id, "FAILED")  # the session's own shell ended, with its code
    for body, field in (({"gpus": 1}, "image"), ({"image": TEST_IMAGE, "gpus": "two"}, "gpus")):
        refused = start_session(port, alice, body)
        assert refused[0] == 400 and field in refused[1], refused
