"""Whether a browser's request comes from the dashboard's own pages: its origin is scheme,
host and port, so a job's web port (another port of the same host, ``web.ports``) is another
origin, though browsers send it the dashboard's cookie."""

from __future__ import annotations

from urllib.parse import urlsplit

from rota.scheduler.http import Request

JSON = "application/json"


def foreign_login(request: Request, scheme: str) -> tuple[int, str] | None:
    """(status, why) when a login request is not a JSON post from this server's own
    origin (``scheme://Host``), else None."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != JSON:
        return 415, f"Content-Type: a login must be sent as {JSON}, not {kind or 'nothing'}"
    foreign = foreign_origin(request, scheme, "a login is accepted")
    return (403, foreign) if foreign else None


def foreign_origin(request: Request, scheme: str, what: str = "this is accepted") -> str:
    """Why ``request`` comes from a page of another origin, the job ports' origin included
    (another port of this host): its ``Origin`` names another host and port, or without one,
    ``Sec-Fetch-Site`` says it is not same-origin, or without that, its ``Referer`` is
    another origin's page. "" when it is this server's own, or names none (scripts)."""
    host = request.headers.get("host", "").strip().lower()
    # the host (and port) alone: a TLS-terminating proxy in front may change the scheme
    origin = request.headers.get("origin")
    if origin is not None:
        if host and urlsplit(origin.strip()).netloc.lower() == host:
            return ""
        return (
            f"Origin: {what} only from this server's own origin "
            f"({scheme}://{host}), not {origin.strip()[:200] or 'an empty one'}"
        )
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        if site.strip().lower() in ("same-origin", "none"):  # none: typed in, a bookmark
            return ""
        return (
            f"Sec-Fetch-Site: {what} only from this server's own pages "
            f"({scheme}://{host}), not from a {site.strip()[:40]} page"
        )
    referer = request.headers.get("referer")
    if referer is not None and (not host or urlsplit(referer.strip()).netloc.lower() != host):
        return (
            f"Referer: {what} only from this server's own pages "
            f"({scheme}://{host}), not {referer.strip()[:200] or 'an empty one'}"
        )
    return ""
