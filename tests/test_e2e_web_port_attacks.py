"""A job's app cannot log whoever views it into the dashboard as the job's owner, with a real
scheduler, agent, Docker container and a real browser (headless chromium).

bob's job (busybox httpd, its CGI scripts written by bob) answers an admin who opens it from
the dashboard with a ``Set-Cookie`` of bob's own dashboard session for ``Path=/`` (which would
replace the admin's, though it is ``HttpOnly``: cookies are not kept apart by port) in forms
the relay's filter once let through: lines ended by a bare LF, a tab after the colon, a
``100 Continue`` answer before the real one, a head longer than the 64 KiB looked at; or it
clears the site's cookies (``Clear-Site-Data``) and sets bob's session from its script; or its
script sets bob's session for a longer path next to a cookie Python's parser stops at. After
each, the admin's dashboard still answers as the admin (or, for the cookies a script planted
next to the admin's, refuses the ambiguous login, naming why), never as bob."""

from __future__ import annotations

import json
import socket

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser import wait_text, wait_until
from tests.cluster import Cluster, free_port
from tests.test_e2e_attach_forward import start_servers
from tests.test_e2e_web import log_in
from tests.test_e2e_web_terminal import answer_of, cookie_of, grant_of, start, ticket_url

PAGE = "<p id=out>planted</p>"
SCRIPT = (
    "<p id=out>...</p><script>{js}document.getElementById('out').textContent='planted'</script>"
)
PAD = "".join(f"X-Pad-{i}: {'a' * 1000}\r\n" for i in range(70))  # 70 KB of head
ANSWERS = {
    "lf": "HTTP/1.1 200 OK\nContent-Type: text/html\nSet-Cookie: {bob}; Path=/\n\n" + PAGE,
    "tab": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie:\t{bob}; Path=/\r\n\r\n"
    + PAGE,
    "interim": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
    "Set-Cookie: {bob}; Path=/\r\n\r\n" + PAGE,
    "long": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
    + PAD
    + "Set-Cookie: {bob}; Path=/\r\n\r\n"
    + PAGE,
    "nameless": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: ={bob}; Path=/\r\n\r\n"
    + PAGE,
    "tabname": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
    "Set-Cookie: {bob}; Path=/\r\n\r\n".replace("rota_session=", "rota_session\t=")
    + PAGE,
    "cleared": 'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nClear-Site-Data: "cookies"\r\n\r\n'
    + SCRIPT.replace("{js}", "document.cookie='{bob}; path=/';"),
    "parser": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    + SCRIPT.replace(
        "{js}", "document.cookie='{bob}; path=/api';document.cookie='z=a\\\\b; path=/api';"
    ),
    # 300 cookies push the admin's (HttpOnly) session out of the browser's jar, then bob's
    "overflow": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    + SCRIPT.replace(
        "{js}",
        "for (let i = 0; i < 300; i++) document.cookie = 'c' + i + '=1; path=/x';"
        "document.cookie='{bob}; path=/';",
    ),
}
PLANTED_BY_SCRIPT = ("cleared", "parser", "overflow")


def test_a_jobs_app_cannot_log_its_viewer_in_as_its_owner(
    cluster: Cluster, browser: WebDriver
) -> None:
    port = start(cluster)
    bob = cluster.add_user("bob")
    bobs_session = cookie_of(port, bob)  # bob's own dashboard login: rota_session=...
    job_id = start_servers(cluster, {"ROTA_TOKEN": bob})
    scripts = cluster.root / "www" / "cgi-bin"
    scripts.mkdir(mode=0o755, exist_ok=True)
    for name, answer in ANSWERS.items():
        script = scripts / name
        text = answer.replace("{bob}", bobs_session)
        script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{text}\nEOF\n")
        script.chmod(0o755)
    dash = f"http://127.0.0.1:{port}"

    def session_user() -> str:
        """Who the dashboard's API takes this browser for."""
        browser.get(f"{dash}/api/v1/session")
        answer = json.loads(browser.find_element(By.TAG_NAME, "body").text)
        return str(answer.get("user") or answer.get("error", ""))

    def page_user() -> str:
        """Who the dashboard's page shows logged in, or its login form and message."""
        browser.get(f"{dash}/")
        who, form = By.ID, "login-view"
        WebDriverWait(browser, 30).until(
            lambda d: (
                d.find_element(who, form).is_displayed()
                or d.find_element(who, "whoami").is_displayed()
            )
        )
        if browser.find_element(who, "whoami").is_displayed():
            return browser.find_element(who, "user-name").text
        return "login: " + browser.find_element(who, "error").text

    log_in(browser, dash, cluster.token)
    admin, admin_shown = session_user(), page_user()
    api, page = {}, {}
    for name in ANSWERS:
        browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
        log_in(browser, dash, cluster.token)  # an admin
        browser.get(f"{dash}/jobs/{job_id}/port/8080/cgi-bin/{name}")
        if name in PLANTED_BY_SCRIPT:
            wait_text(browser, "#out", "planted")
        api[name], page[name] = session_user(), page_user()
    assert admin != "bob" and admin_shown.startswith(admin)
    # the cookie jar's overflow: where Chromium kept the planted login, the server cannot tell
    # (the page can, below); where its eviction dropped that too, nobody is logged in
    overflowed = api.pop("overflow")
    assert overflowed == "bob" or overflowed.startswith("log in first"), overflowed
    several = api.pop("parser")
    assert several.startswith("several rota_session cookies"), several
    assert api == {name: admin for name in api}, json.dumps(api)
    assert page.pop("parser").startswith("login: several rota_session cookies")
    replaced = page.pop("overflow")
    if overflowed == "bob":
        assert replaced.startswith("login: This browser's dashboard login was replaced"), replaced
    else:
        assert replaced.startswith("login: "), replaced
    assert page == {name: admin_shown for name in page}, json.dumps(page)


def test_one_users_hanging_requests_leave_others_their_ports(cluster: Cluster) -> None:
    """bob's app never answers (a CGI script sleeping): the requests he keeps open to it
    would each hold one of the connections the ports origin lends to proxied requests (half
    of ``http_max_connections``); beyond his share (an eighth) he is refused, naming the
    limit, and alice's port still answers."""
    port, ports = free_port(), free_port()
    settings = cluster.root / "scheduler.yaml"
    settings.write_text(
        f"http_listen: 127.0.0.1:{port}\nweb_ports_listen: 127.0.0.1:{ports}\n"
        f"http_max_connections: 16\nopen_registration: true\n"
        f"allowed_mounts: [{cluster.root}]\n"
    )
    cluster.start_scheduler("--config", str(settings))
    cluster.start_agent("n1", gpus=1)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    hers = start_servers(cluster, {"ROTA_TOKEN": alice})
    his = start_servers(cluster, {"ROTA_TOKEN": bob})
    scripts = cluster.root / "www" / "cgi-bin"
    scripts.mkdir(mode=0o755, exist_ok=True)
    (scripts / "hang").write_text("#!/bin/sh\nsleep 300\n")
    (scripts / "hang").chmod(0o755)
    grant = grant_of(ticket_url(port, f"/jobs/{his}/port/8080/", cookie_of(port, bob)))
    hanging, answers = [], []
    for _ in range(8):  # every connection the ports origin lends to proxied requests
        conn = socket.create_connection(("127.0.0.1", ports), timeout=60)
        conn.sendall(
            f"GET /jobs/{his}/port/8080/cgi-bin/hang HTTP/1.1\r\nHost: 127.0.0.1:{ports}\r\n"
            f"Cookie: {grant}\r\n\r\n".encode()
        )
        hanging.append(conn)
    try:
        for conn in hanging[2:]:  # his share is 16 // 8 = 2
            conn.settimeout(60)
            answers.append(conn.recv(4096))
        assert all(a.startswith(b"HTTP/1.1 503") and b"close some" in a for a in answers)
        mine = grant_of(ticket_url(port, f"/jobs/{hers}/port/8080/", cookie_of(port, alice)))
        assert answer_of(ports, f"/jobs/{hers}/port/8080/", {"Cookie": mine}).status == 200
    finally:
        for conn in hanging:
            conn.close()


SW = """self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (e) => {
  if (e.request.mode === "navigate" && !e.request.url.includes("/cgi-bin/")) {
    e.respondWith(new Response("<p id=out>stolen " + e.request.url + "</p>",
      {headers: {"Content-Type": "text/html"}}));
  }
});
"""
WORKER = """<p id=out>...</p><script>
navigator.serviceWorker.register("sw", {scope: "/"}).then(
  () => navigator.serviceWorker.ready).then(
  () => { document.getElementById("out").textContent = "planted"; },
  (e) => { document.getElementById("out").textContent = "refused " + e; });
</script>"""


def test_a_jobs_service_worker_cannot_take_the_other_jobs_ports(
    cluster: Cluster, browser: WebDriver
) -> None:
    """bob's app answers its service worker's script with ``Service-Worker-Allowed: /``, so
    that a worker it registers would control the whole ports origin: every later navigation
    of the admin's browser there (alice's port, its ticket in the URL; her Jupyter with its
    token) would be answered by bob's script. The header is dropped; the worker may control
    bob's own prefix only, and alice's port opens as hers."""
    port = start(cluster)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    hers = start_servers(cluster, {"ROTA_TOKEN": alice})
    his = start_servers(cluster, {"ROTA_TOKEN": bob})
    scripts = cluster.root / "www" / "cgi-bin"
    scripts.mkdir(mode=0o755, exist_ok=True)
    for name, head, body in (
        ("sw", "Content-Type: text/javascript\r\nService-Worker-Allowed: /", SW),
        ("page", "Content-Type: text/html", WORKER),
    ):
        text = f"HTTP/1.1 200 OK\r\n{head}\r\n\r\n{body}"
        (scripts / name).write_text(f"#!/bin/sh\ncat <<'EOF'\n{text}\nEOF\n")
        (scripts / name).chmod(0o755)
    dash = f"http://127.0.0.1:{port}"
    log_in(browser, dash, cluster.token)  # an admin
    browser.get(f"{dash}/jobs/{his}/port/8080/cgi-bin/page")
    registered = wait_text(browser, "#out", "e")  # planted, or refused
    browser.get(f"{dash}/jobs/{hers}/port/8080/index.html")
    shown = browser.find_element(By.TAG_NAME, "body").text
    assert shown.strip() == "hello from inside the job", (registered, shown)
    assert registered.startswith("refused"), registered


def test_over_plain_http_a_jobs_page_gets_no_ticket_to_another_jobs_port(
    cluster: Cluster, named_browser: WebDriver
) -> None:
    """Served over plain HTTP on a name that is not loopback (``--insecure`` on a lab
    network), browsers send no ``Sec-Fetch-Site``, and bob's page sends no ``Referer``
    (``no-referrer``): its navigation of the admin's tab to the dashboard's door of alice's
    port names no origin at all. The door asks for the CSRF token the job page's own link
    carries, so the admin's browser gets no ticket (nor a grant bob's page could then use)."""
    browser = named_browser
    port = start(cluster)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    hers = start_servers(cluster, {"ROTA_TOKEN": alice})
    his = start_servers(cluster, {"ROTA_TOKEN": bob})
    dash = f"http://sched.test:{port}"
    (cluster.root / "www" / "steal.html").write_text(
        '<meta name="referrer" content="no-referrer"><p id=out>bob</p><script>'
        f'setTimeout(() => {{ location.href = "{dash}/jobs/{hers}/port/8080/index.html"; }}, 500);'
        "</script>"
    )
    log_in(browser, dash, cluster.token)  # an admin opens bob's port from his job's page
    browser.get(f"{dash}/#job/{his}")
    wait_until(browser, "#web-port").send_keys("8080")
    link = wait_until(browser, "#web-port-open")
    browser.get(str(link.get_attribute("href")).replace("/port/8080/?", "/port/8080/steal.html?"))
    # bob's page, on the ports origin, sends the tab on to alice's port
    WebDriverWait(browser, 30).until(lambda d: f"/jobs/{hers}/" in d.current_url)
    shown = wait_until(browser, "body").text
    assert "hello from inside the job" not in shown and "rota_csrf" in shown, shown
    assert browser.current_url.startswith(f"{dash}/jobs/{hers}/port/8080/")  # not let through
