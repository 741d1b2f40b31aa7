"""The dashboard's own files (HTML, CSS, JavaScript), shipped as package data and served from
memory: nothing is fetched from anywhere else, so it works on a lab network with no internet."""

from __future__ import annotations

from importlib import resources

from rota.scheduler.http import Request, Response, Route

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
# the page loads only its own files, talks only to its own API, and is never framed; inline
# styles are allowed because xterm.js (the terminal) writes its own <style> elements
HEADERS = (
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-cache"),
)


class Files:
    """``/`` is the page; ``/static/NAME`` one of the files beside it, ``/static/vendor/NAME``
    one of the third-party files it uses (xterm.js)."""

    def __init__(self) -> None:
        folder = resources.files("rota.scheduler.web") / "static"
        self._files: dict[str, Response] = {}
        for prefix, where in (("", folder), ("vendor/", folder / "vendor")):
            for entry in where.iterdir():
                kind = TYPES.get("." + entry.name.rpartition(".")[2])
                if kind is not None:
                    body = entry.read_bytes()
                    self._files[prefix + entry.name] = Response(200, body, kind, HEADERS)

    def routes(self) -> list[Route]:
        return [
            Route("GET", "/", self.page),
            Route("GET", "/static/{name}", self.file),
            Route("GET", "/static/vendor/{name}", self.vendor),
        ]

    async def page(self, request: Request) -> Response:
        return self._files["index.html"]

    async def file(self, request: Request) -> Response:
        found = self._files.get(request.params["name"])
        return found if found is not None else Response(404, b"not found\n")

    async def vendor(self, request: Request) -> Response:
        found = self._files.get("vendor/" + request.params["name"])
        return found if found is not None else Response(404, b"not found\n")
