"""Each job's web ports on its own host (``web_ports_domain``), with a real scheduler, agent,
Docker containers and a real browser (headless chromium, which takes every ``*.localhost``
name for loopback by itself, so ``ports.localhost`` stands for a lab's ``ports.lab.example``).

An admin opens alice's job's port from the job page's link (ticket, then alice's job's own
host ``jA.ports.localhost``, then the app), then bob's job's page on ``jB.ports.localhost``,
whose script tries alice's path on its own host, a fetch and a frame of alice's host (the
hosts are same-site, so the browser sends the admin's grant), then sets a ``rota_port`` cookie
for the whole domain, fills the jar with cookies and tries again: none of it reaches alice's
app (no ``Interact/forward`` of hers is recorded), the planted cookie opens nothing, and the
dashboard (on 127.0.0.1, not under the domain) still answers as the admin."""

from __future__ import annotations

import json

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser import wait_text, wait_until
from tests.cluster import Cluster, free_port
from tests.test_e2e_attach_forward import start_servers
from tests.test_e2e_web import log_in

DOMAIN = "ports.localhost"
ATTACK = """<!doctype html><title>bob's notebook</title><pre id="out">running</pre>
<iframe id="frame"></iframe>
<script>
const hers = "{hers}";
async function attempt(name, call) {{
  try {{ return name + "=" + (await call()); }} catch (e) {{ return name + "=blocked"; }}
}}
async function framed(url) {{
  const frame = document.getElementById("frame");
  await new Promise((done) => {{ frame.onload = done; frame.src = url; }});
  await new Promise((done) => setTimeout(done, 1500));
  return frame.contentDocument.body.textContent;  // throws unless same-origin
}}
async function tries(out, tag) {{
  out.push(await attempt(tag + "path", async () => (await fetch("{path}")).status));
  out.push(await attempt(tag + "fetch", async () => (await fetch(hers, {{
    credentials: "include"}})).status));
  out.push(await attempt(tag + "nocors", async () => (await fetch(hers, {{
    mode: "no-cors", credentials: "include"}})).status));
  out.push(await attempt(tag + "frame", () => framed(hers)));
}}
(async () => {{
  const out = [];
  await tries(out, "");
  document.cookie = "rota_port=planted; domain={domain}; path=/";
  out.push("jar=" + document.cookie.includes("rota_port=planted"));
  await tries(out, "planted-");
  for (let i = 0; i < 300; i++)  // past the browser's cookies per site, 4 KB each
    document.cookie = "c" + i + "=" + "x".repeat(4000) + "; domain={domain}; path=/";
  await tries(out, "bomb-");
  document.getElementById("out").textContent = out.join("|") + "|done";
}})();
</script>
"""


def test_a_sibling_jobs_page_cannot_use_the_viewers_grant(
    cluster: Cluster, browser: WebDriver
) -> None:
    port = free_port()
    cluster.start_scheduler(
        "--open-registration",
        "--allowed-mount",
        str(cluster.root),
        "--http-listen",
        f"127.0.0.1:{port}",
        "--web-ports-domain",
        DOMAIN,
    )
    cluster.start_agent("n1", gpus=1)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    victim = start_servers(cluster, {"ROTA_TOKEN": alice})
    attacker = start_servers(cluster, {"ROTA_TOKEN": bob})  # serves the same folder
    dash, at = f"http://127.0.0.1:{port}", cluster.ports_port
    hers = f"http://j{victim}.{DOMAIN}:{at}/jobs/{victim}/port/8080/"
    page = ATTACK.format(
        hers=hers + "index.html", path=f"/jobs/{victim}/port/8080/index.html", domain=DOMAIN
    )
    (cluster.root / "www" / "notebook.html").write_text(page)

    log_in(browser, dash, cluster.token)  # an admin
    browser.get(f"{dash}/#job/{victim}")
    wait_until(browser, "#web-port").send_keys("8080")  # the page's own link, in a new tab
    wait_until(browser, "#web-port-open").click()
    WebDriverWait(browser, 30).until(lambda d: len(d.window_handles) == 2)
    browser.switch_to.window(browser.window_handles[1])
    wait_text(browser, "body", "hello from inside the job")
    assert browser.current_url == hers  # alice's job's own host, the ticket gone
    grants = browser.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
    grant = [c for c in grants if c["name"] == "rota_port"]
    assert [c["domain"] for c in grant] == [f"j{victim}.{DOMAIN}"], grant  # host-only
    browser.close()
    browser.switch_to.window(browser.window_handles[0])

    def forwards() -> int:
        """alice's job's port requests recorded (each reaches her app)."""
        audit = cluster.cli("gadmin", "audit", check=True).stdout
        return sum(
            "Interact/forward" in line and f"id={victim} " in line for line in audit.splitlines()
        )

    opened = forwards()
    assert opened >= 1
    browser.get(f"{dash}/jobs/{attacker}/port/8080/notebook.html")
    shown = wait_text(browser, "#out", "done", timeout=90)
    assert browser.current_url.startswith(f"http://j{attacker}.{DOMAIN}:{at}/")
    results = dict(item.split("=", 1) for item in shown.split("|")[:-1])
    assert results.pop("jar") == "true", shown  # the browser took the domain's cookie
    # alice's path on bob's host is misdirected (421); a fetch of alice's host is cross-origin
    # (unreadable) and, like the frame, refused by the ports listener; with the planted
    # cookie and the cookie bomb, the same
    for tag in ("", "planted-"):
        assert results.pop(tag + "path") == "421", shown
        assert results.pop(tag + "fetch") == "blocked", shown
        assert results.pop(tag + "nocors") == "0", shown
        assert results.pop(tag + "frame") == "blocked", shown
    # bob's page bombed its own host too: its requests may be refused or cut off (blocked)
    assert results.pop("bomb-path") in ("400", "blocked"), shown
    assert results.pop("bomb-nocors") in ("0", "blocked"), shown
    assert results == {"bomb-fetch": "blocked", "bomb-frame": "blocked"}, shown
    assert forwards() == opened, "a request of bob's page reached alice's app"

    # the dashboard is not under the domain: neither the bomb nor the planted cookies reach it
    browser.get(f"{dash}/api/v1/session")
    session = json.loads(browser.find_element(By.TAG_NAME, "body").text)
    assert session.get("admin") is True and session.get("user"), session
