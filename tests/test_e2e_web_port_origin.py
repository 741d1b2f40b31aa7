"""A job's web port is served on its own origin, so its page cannot act as whoever views it
(issue 25 item 4), with a real scheduler, agent, Docker containers and a real browser
(headless chromium).

bob's job serves a page whose script, opened by an admin, tries to cancel alice's job through
the dashboard's API with the admin's cookie, to read the admin's session, and to have the
dashboard hand it a ticket to alice's job's port in a frame: all refused, and alice's job
runs on. Over plain HTTP: a ticket is good once; a forged one, or bob's ticket on alice's
port, opens nothing; bob gets no ticket for alice's job; a grant's cookie opens its own port
only; the dashboard's cookie and bearer tokens open nothing on the ports origin; refusals are
audited. With TLS, the ports origin serves the scheduler's certificate and a ``Secure``
cookie."""

from __future__ import annotations

import http.client
import json
import ssl
from urllib.parse import urlsplit

from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import wait_text
from tests.cluster import TEST_IMAGE, Cluster, free_port
from tests.test_e2e_attach_forward import start_servers
from tests.test_e2e_web import log_in
from tests.test_e2e_web_terminal import answer_of, cookie_of, grant_of, start, ticket_url

ATTACK = """<!doctype html><title>bob's notebook</title><pre id="out">running</pre>
<iframe id="frame"></iframe>
<script>
const dash = "{dash}";
async function attempt(name, call) {{
  try {{ return name + "=" + (await call()); }} catch (e) {{ return name + "=blocked"; }}
}}
async function framed(url) {{
  const frame = document.getElementById("frame");
  await new Promise((done) => {{ frame.onload = done; frame.src = url; }});
  await new Promise((done) => setTimeout(done, 1500));  // let any redirect finish
  return frame.contentDocument.body.textContent;  // throws unless same-origin
}}
(async () => {{
  const out = [];
  const cancel = dash + "/api/v1/jobs/{victim}/cancel";
  out.push(await attempt("simple", async () => (await fetch(cancel, {{
    method: "POST", credentials: "include", headers: {{"Content-Type": "text/plain"}},
    body: "{{}}"}})).status));
  out.push(await attempt("csrf", async () => (await fetch(cancel, {{
    method: "POST", credentials: "include",
    headers: {{"Content-Type": "application/json", "X-CSRF-Token": "guess"}},
    body: "{{}}"}})).status));
  out.push(await attempt("nocors", async () => (await fetch(cancel, {{
    method: "POST", mode: "no-cors", credentials: "include", body: "{{}}"}})).status));
  out.push(await attempt("session", async () => JSON.stringify(await (await fetch(
    dash + "/api/v1/session", {{credentials: "include"}})).json())));
  out.push(await attempt("frame", () => framed(dash + "/jobs/{victim}/port/8080/index.html")));
  document.getElementById("out").textContent = out.join("|") + "|done";
}})();
</script>
"""


def test_a_jobs_page_cannot_use_the_viewers_dashboard_login(
    cluster: Cluster, browser: WebDriver
) -> None:
    port = start(cluster)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    victim = start_servers(cluster, {"ROTA_TOKEN": alice})
    attacker = start_servers(cluster, {"ROTA_TOKEN": bob})  # serves the same folder
    dash = f"http://127.0.0.1:{port}"
    page = ATTACK.format(dash=dash, victim=victim)
    (cluster.root / "www" / "notebook.html").write_text(page)

    log_in(browser, dash, cluster.token)  # an admin, who may cancel alice's job
    browser.get(f"{dash}/jobs/{attacker}/port/8080/notebook.html")
    shown = wait_text(browser, "#out", "done", timeout=60)
    assert browser.current_url.startswith(f"http://127.0.0.1:{cluster.ports_port}/")
    results = dict(item.split("=", 1) for item in shown.split("|")[:-1])
    # the browser may send a simple post with the cookie, but the dashboard refuses it (403)
    # and the page may not read the answer; a post with a header needs a preflight, refused;
    # the session (and its CSRF token) cannot be read; the frame gets no ticket
    assert results == {
        "simple": "blocked",
        "csrf": "blocked",
        "nocors": "0",
        "session": "blocked",
        "frame": "blocked",
    }, shown
    job = json.loads(cluster.cli("gqueue", "--json", "-j", victim, check=True).stdout)[0]
    assert job["state"] == "RUNNING"
    audit = cluster.cli("gadmin", "audit", check=True).stdout
    refused = [line for line in audit.splitlines() if "PERMISSION_DENIED" in line]
    assert sum("cancel" in line or "action" in line for line in refused) >= 2, audit
    assert any("Sec-Fetch-Site" in line for line in refused), audit  # the frame's ticket


def test_tickets_and_grants_open_only_their_own_port(cluster: Cluster) -> None:
    port = start(cluster)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    hers = start_servers(cluster, {"ROTA_TOKEN": alice})
    his = start_servers(cluster, {"ROTA_TOKEN": bob})
    ann, ben = cookie_of(port, alice), cookie_of(port, bob)
    path = f"/jobs/{hers}/port/8080/index.html"
    ports = cluster.ports_port

    url = ticket_url(port, path, ann)
    where = urlsplit(url)
    assert where.port == ports and "rota_ticket=" in where.query
    grant = grant_of(url)
    opened = answer_of(ports, path, {"Cookie": grant})
    assert opened.status == 200
    again = answer_of(ports, f"{where.path}?{where.query}", {})  # replayed
    assert again.status == 403
    forged = answer_of(ports, f"{path}?rota_ticket=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", {})
    assert forged.status == 403

    # bob: no ticket for alice's job; his own ticket and grant open his job only
    typed = {"Cookie": ben, "Host": f"127.0.0.1:{port}", "Sec-Fetch-Site": "none"}
    assert answer_of(port, path, typed).status == 403
    his_url = urlsplit(ticket_url(port, f"/jobs/{his}/port/8080/index.html", ben))
    assert answer_of(ports, f"{path}?{his_url.query}", {}).status == 403
    his_grant = grant_of(ticket_url(port, f"/jobs/{his}/port/8080/index.html", ben))
    assert answer_of(ports, path, {"Cookie": his_grant}).status == 401
    assert answer_of(ports, path, {"Cookie": f"{his_grant}; {ann}"}).status == 401
    assert answer_of(ports, path, {"Authorization": f"Bearer {alice}"}).status == 401
    assert answer_of(ports, "/api/v1/session", {"Cookie": ann}).status == 404

    audit = cluster.cli("gadmin", "audit", check=True).stdout
    assert sum("rota_ticket" in line for line in audit.splitlines()) >= 3, audit
    assert any("bob" in line and "PERMISSION_DENIED" in line for line in audit.splitlines())


def test_with_tls_the_ports_origin_serves_the_same_certificate(cluster: Cluster) -> None:
    certs = cluster.root / "tls"
    made = cluster.cli("rota", "certs", "init", "--dir", str(certs))
    assert made.returncode == 0, made.stderr
    port = free_port()
    cluster.env_extra["ROTA_CA"] = str(certs / "ca.pem")
    cluster.start_scheduler(
        "--open-registration",
        "--http-listen",
        f"127.0.0.1:{port}",
        "--tls-cert",
        str(certs / "scheduler.pem"),
        "--tls-key",
        str(certs / "scheduler-key.pem"),
    )
    cluster.cli("gadmin", "node", "add", "n1", check=True)
    job_id = cluster.submit(f"image: {TEST_IMAGE}\ncommand: [sleep, '600']\n")  # stays pending
    trusted = ssl.create_default_context(cafile=str(certs / "ca.pem"))

    def get(at: int, path: str, headers: dict[str, str]) -> http.client.HTTPResponse:
        conn = http.client.HTTPSConnection("127.0.0.1", at, timeout=30, context=trusted)
        conn.request("GET", path, headers=headers)
        answer = conn.getresponse()
        answer.read()
        return answer

    bearer = {"Authorization": f"Bearer {cluster.token}"}
    door = get(port, f"/jobs/{job_id}/port/8888/", bearer)
    where = urlsplit(str(door.getheader("Location")))
    assert door.status == 303 and where.scheme == "https" and where.port == cluster.ports_port
    exchanged = get(cluster.ports_port, f"{where.path}?{where.query}", {})
    cookie = str(exchanged.getheader("Set-Cookie"))
    assert exchanged.status == 303 and "Secure" in cookie and "HttpOnly" in cookie, cookie
    assert f"Path=/jobs/{job_id}/port/8888/" in cookie and "SameSite=Lax" in cookie
    pending = get(cluster.ports_port, where.path, {"Cookie": cookie.split(";")[0]})
    assert pending.status == 409  # the grant is good; the job is not running
