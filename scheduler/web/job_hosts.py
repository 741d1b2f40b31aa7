"""One origin per job for jobs' web ports (``web_ports_domain``): job ``12``'s ports are served
at ``j12.DOMAIN`` (an array task ``12_3`` at ``j12-3.DOMAIN``) on the ports listener, so one
job's page is another origin than every other job's, and a grant its browser holds for one job
is sent to that job's host only.

One host per job, not per port: all of a job's ports run its owner's code in one container,
so keeping them apart would guard nothing the owner cannot do already, while a host per job
keeps one wildcard DNS record and certificate (``*.DOMAIN``) either way.

The ports listener serves a request only when its ``Host`` names the job its path is for (a
Host outside DOMAIN, or another job's, is 421), and, under a grant, only when it comes from
that job's own pages or is a top-level navigation (``Sec-Fetch-*``, else ``Origin``): a sibling
job's page, which is same-site (the browser sends it the grant's ``SameSite=Lax`` cookie),
can neither fetch nor frame it (403).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from rota.scheduler.http import Request

NAVIGATION = ("GET", "HEAD")  # the methods a navigation from elsewhere may use


def host_of(job_id: str, domain: str) -> str:
    """The host name job ``job_id``'s ports are served at under ``domain``."""
    return f"j{job_id.replace('_', '-')}.{domain}"


def host_name(request: Request) -> str:
    """The name in ``request``'s ``Host`` header, lower case, without its port."""
    host = request.headers.get("host", "").strip().lower()
    return host if host.endswith("]") else host.rsplit(":", 1)[0]


def misdirected(request: Request, job_id: str, domain: str) -> str:
    """Why ``request`` for job ``job_id``'s port must not be served on the host it names
    ("" when it is the job's own host)."""
    name, own = host_name(request), host_of(job_id, domain)
    if name == own:
        return ""
    return (
        f"Host: job {job_id}'s ports are served at {own} only, not at {name[:100] or 'no host'}: "
        "open the port from the job's page on the dashboard"
    )


def foreign_use(request: Request) -> str:
    """Why a request under a grant comes from a page that is not the job's own ("" when it
    is the job's own page, the address bar, or a top-level navigation by GET): a sibling
    job's page may fetch or frame the job's host, and the browser sends it the grant."""
    site = request.headers.get("sec-fetch-site", "").strip().lower()
    if site in ("same-origin", "none"):
        return ""
    if site:
        mode = request.headers.get("sec-fetch-mode", "").strip().lower()
        dest = request.headers.get("sec-fetch-dest", "").strip().lower()
        if mode == "navigate" and dest == "document" and request.method in NAVIGATION:
            return ""
        return (
            f"Sec-Fetch-Site: a job's port answers its own pages only, not a {site[:40]} "
            f"page's {mode[:40] or 'request'} for {dest[:40] or 'something'} (a frame or "
            "fetch from another job's page): open it from the dashboard"
        )
    origin = request.headers.get("origin")
    if origin is None:
        return ""  # plain HTTP off loopback: browsers send Origin with every change
    if urlsplit(origin.strip()).netloc.lower() == request.headers.get("host", "").lower():
        return ""
    return f"Origin: a job's port answers its own pages only, not {origin.strip()[:200]!r}"
