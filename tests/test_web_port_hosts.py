"""Each job's web ports on its own host (``web_ports_domain``), without a browser or a running
job: the dashboard sends a browser to ``jID.DOMAIN``; the ports listener serves a ticket or a
grant only on the host of the job its path names (another job's host, or one outside DOMAIN,
is 421), refuses several ``rota_port`` cookies (a sibling job's page may set one for the whole
domain) and requests from another page than the job's own (a sibling's fetch or frame, to
which the browser sends the grant: the hosts are same-site); the grant's cookie is host-only
and the app's cookies are made so; over TLS a wildcard certificate serves every job's host
(tests/test_e2e_web_port_hosts.py has the browser)."""

from __future__ import annotations

import asyncio
import http.client
import socket
import ssl
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from rota.cli.certs import init_certs
from rota.scheduler.config import load_config
from rota.scheduler.http import HttpServer
from rota.scheduler.web.dashboard import dashboard_routes, port_routes
from rota.scheduler.web.identity import EngineTokens
from rota.scheduler.web.job_hosts import host_of
from rota.scheduler.web.port_grants import Door, PortGrants
from rota.tls import http_ssl_context
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler
from tests.support.tokens import aio_channel
from tests.test_security_web_ports import relayed
from tests.test_web_api import Browserless, registered, user

DOMAIN = "ports.localhost"


def _get(port: int, target: str, headers: dict[str, str]) -> http.client.HTTPResponse:
    """A GET of ``target`` on 127.0.0.1:``port`` with ``headers`` (``Host`` among them), as
    answered (a 303 not followed)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("GET", target, headers=headers)
    answer = conn.getresponse()
    answer.read()
    return answer


def test_each_jobs_port_is_served_on_its_own_host_only(tmp_path: Path) -> None:
    async def main() -> None:
        async with InProcessScheduler(tmp_path) as sched:
            await registered(sched, "n1", 1)
            ann = await user(sched, "ann")
            async with aio_channel(sched.address, ann) as channel:
                stub = pb_grpc.JobServiceStub(channel)
                for n in (1, 2):  # held: a grant is good, the job does not run (409)
                    spec = pb.JobSpec(image="img", command=["true"], hold=True)
                    item = pb.SubmitItem(spec=spec, client_request_id=f"r{n}")
                    await stub.SubmitJobs(pb.SubmitJobsRequest(items=[item]))
            tokens, grants = EngineTokens(sched.engine), PortGrants(lambda: 0.0)
            dash = HttpServer(dashboard_routes(sched.engine, tokens, False, grants, 256, DOMAIN))
            ports = HttpServer(port_routes(sched.engine, tokens, grants, False, 256, DOMAIN))
            web = Browserless(await dash.start("127.0.0.1:0"))
            at = grants.port = await ports.start("127.0.0.1:0")
            try:
                await web.login(ann)
                await asyncio.to_thread(_check, web, at)
            finally:
                await dash.stop()
                await ports.stop()

    asyncio.run(main())


def _check(web: Browserless, at: int) -> None:
    dash = int(web.base.rpartition(":")[2])
    one, two = f"j1.{DOMAIN}:{at}", f"j2.{DOMAIN}:{at}"
    typed = {"Cookie": web.cookie, "Host": f"127.0.0.1:{dash}", "Sec-Fetch-Site": "none"}

    def ticket() -> str:
        door = _get(dash, "/jobs/1/port/80/x?a=1", typed)
        assert door.status == 303, door.status
        where = urlsplit(str(door.getheader("Location")))
        assert (where.scheme, where.netloc, where.path) == ("http", one, "/jobs/1/port/80/x")
        assert where.query.startswith("a=1&rota_ticket=")
        return f"{where.path}?{where.query}"

    # the ticket is exchanged on job 1's own host only (any case, any port in Host)
    for host in (two, f"127.0.0.1:{at}", f"j1.{DOMAIN}.evil.example", "", f"j1.{DOMAIN}x"):
        refused = _get(at, ticket(), {"Host": host} if host else {"Host": ""})
        assert refused.status == 421, (host, refused.status)
    exchanged = _get(at, ticket(), {"Host": f"J1.Ports.Localhost:{at + 1}"})
    cookie = str(exchanged.getheader("Set-Cookie"))
    assert exchanged.status == 303 and "domain" not in cookie.lower(), cookie
    assert "Path=/jobs/1/port/80/" in cookie and "HttpOnly" in cookie
    grant = cookie.split(";")[0]
    assert exchanged.getheader("Location") == "/jobs/1/port/80/x?a=1"

    def status(path: str, host: str, **headers: str) -> int:
        return _get(at, path, {"Host": host, "Cookie": grant, **headers}).status

    assert status("/jobs/1/port/80/x", one) == 409  # the grant is good: the job is held
    assert status("/jobs/1/port/80/x", two) == 421  # job 1's grant on job 2's host
    assert status("/jobs/2/port/80/x", one) == 421  # job 2's path on job 1's host
    assert status("/jobs/1/port/80", two) == 421  # the slash redirect too
    assert status("/jobs/1/port/80", one) == 303
    # a sibling job's page set a rota_port cookie for the whole domain: refused, whichever
    conn = http.client.HTTPConnection("127.0.0.1", at, timeout=20)
    conn.request(
        "GET", "/jobs/1/port/80/x", headers={"Host": one, "Cookie": f"{grant}; rota_port=x"}
    )
    two_cookies = conn.getresponse()
    assert two_cookies.status == 400 and b"several rota_port" in two_cookies.read()
    # the hosts are same-site, so the browser sends the grant to a sibling's fetch or frame
    same_site = {"Sec-Fetch-Site": "same-site"}
    assert status("/jobs/1/port/80/x", one, **same_site, **{"Sec-Fetch-Mode": "cors"}) == 403
    framed = {**same_site, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}
    assert status("/jobs/1/port/80/x", one, **framed) == 403
    opened = {**same_site, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    assert status("/jobs/1/port/80/x", one, **opened) == 409  # a top-level navigation
    mine = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
    assert status("/jobs/1/port/80/x", one, **mine) == 409
    # plain HTTP off loopback: no Sec-Fetch-*, but every change names its Origin
    assert status("/jobs/1/port/80/x", one, Origin=f"http://{two}") == 403
    assert status("/jobs/1/port/80/x", one, Origin=f"http://{one}") == 409


def test_with_tls_a_wildcard_certificate_serves_every_jobs_host(tmp_path: Path) -> None:
    """The ports listener serves the scheduler's one certificate: made with
    ``--scheduler-name '*.ports.localhost'``, a browser verifies it for any job's host, and
    the grant's cookie is Secure and host-only."""
    certs = tmp_path / "tls"
    init_certs(certs, ["sched.lab.example", f"*.{DOMAIN}"])
    trusted = ssl.create_default_context(cafile=str(certs / "ca.pem"))

    async def main() -> None:
        async with InProcessScheduler(tmp_path) as sched:
            tokens, grants = EngineTokens(sched.engine), PortGrants(lambda: 0.0)
            ports = HttpServer(port_routes(sched.engine, tokens, grants, True, 256, DOMAIN))
            tls = http_ssl_context(str(certs / "scheduler.pem"), str(certs / "scheduler-key.pem"))
            at = await ports.start("127.0.0.1:0", tls)
            ticket = grants.ticket("ann", "h", Door("7", "port", 80))
            try:
                head = await asyncio.to_thread(
                    _tls_get, at, f"j7.{DOMAIN}", f"/jobs/7/port/80/?rota_ticket={ticket}", trusted
                )
            finally:
                await ports.stop()
            assert head.startswith("HTTP/1.1 303"), head
            cookie = next(h for h in head.split("\r\n") if h.startswith("Set-Cookie:"))
            assert "; Secure" in cookie and "domain" not in cookie.lower(), cookie

    asyncio.run(main())


def _tls_get(at: int, host: str, target: str, trusted: ssl.SSLContext) -> str:
    """The head of a GET over TLS to 127.0.0.1:``at`` as ``host`` (its name verified)."""
    raw = socket.create_connection(("127.0.0.1", at), timeout=20)
    with trusted.wrap_socket(raw, server_hostname=host) as conn:
        conn.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}:{at}\r\n\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer and (chunk := conn.recv(4096)):
            answer += chunk
    return answer.decode("latin-1")


def test_an_array_tasks_host_is_a_dns_name() -> None:
    assert host_of("12_3", DOMAIN) == f"j12-3.{DOMAIN}"
    assert host_of("12", DOMAIN) == f"j12.{DOMAIN}"


def test_the_apps_cookies_stay_on_its_own_host() -> None:
    """A job's app may not set a cookie for a sibling job's host or the dashboard's: its
    ``Domain`` attribute is dropped, whatever its case or spacing."""
    for domain in ("Domain=ports.localhost", " dOmAiN\t= localhost ", "domain=", "Domain"):
        head = f"HTTP/1.1 200 OK\r\nSet-Cookie: a=b; {domain}; Path=/x\r\n\r\n".encode()
        assert relayed(head) == b"HTTP/1.1 200 OK\r\nSet-Cookie: a=b; Path=/x\r\n\r\n", domain
    theirs = b"HTTP/1.1 200 OK\r\nSet-Cookie: domain=1; Path=/x; HttpOnly\r\n\r\n"
    assert relayed(theirs) == theirs  # a cookie named domain is the app's own


def test_a_bad_domain_setting_is_refused_naming_it() -> None:
    def scheduler(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "rota.cli.rota_main", "scheduler", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    alone = scheduler("--web-ports-domain", DOMAIN, "--web-ports-listen", "")
    assert alone.returncode == 2 and "web_ports_domain needs web_ports_listen" in alone.stderr
    out = scheduler("--web-ports-domain", "a..b", "--web-ports-listen", "127.0.0.1:1")
    assert out.returncode == 2 and "web_ports_domain 'a..b' is not a DNS domain" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    for bad in ("10.0.0.1", "j_1.lab", "-a.lab", "a." * 101 + "lab"):
        with pytest.raises(ValueError, match="web_ports_domain"):
            load_config(None, web_ports_listen="127.0.0.1:1", web_ports_domain=bad)
    good = load_config(None, web_ports_listen="127.0.0.1:1", web_ports_domain="Ports.Lab.")
    assert good.web_ports_domain == "ports.lab"
