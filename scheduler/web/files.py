"""The dashboard's own files (HTML, CSS, JavaScript), shipped as package data and served from
memory: nothing is fetched from anywhere else, so it works on a lab network with no internet."""

from __future__ import annotations

from importlib import resources

from rota.scheduler.http import Request, Response, Route

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
# the page loads only its own files, talks only to its own API, and is never framed
HEADERS = (
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-cache"),
)


class Files:
    """``/`` is the page; ``/static/NAME`` one of the files beside it."""

    def __init__(self) -> None:
        folder = resources.files("rota.scheduler.web") / "static"
        self._files: dict[str, Response] = {}
        for entry in folder.iterdir():
            kind = TYPES.get("." + entry.name.rpartition(".")[2])
            if kind is not None:
                self._files[entry.name] = Response(200, entry.read_bytes(), kind, HEADERS)

    def routes(self) -> list[Route]:
        return [Route("GET", "/", self.page), Route("GET", "/static/{name}", self.file)]

    async def page(self, request: Request) -> Response:
        return self._files["index.html"]

    async def file(self, request: Request) -> Response:
        found = self._files.get(request.params["name"])
        return found if found is not None else Response(404, b"not found\n")
