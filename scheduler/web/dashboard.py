"""The routes the HTTP port serves for people: the dashboard's page and files at ``/`` and its
JSON API at ``/api/v1`` (reservations included)."""

from __future__ import annotations

import time

from rota.scheduler.engine import Engine
from rota.scheduler.http import Route
from rota.scheduler.web.api import Api
from rota.scheduler.web.bookings import Bookings
from rota.scheduler.web.commands import CommandRoutes
from rota.scheduler.web.files import Files
from rota.scheduler.web.identity import TokenCheck
from rota.scheduler.web.sessions import Sessions


def dashboard_routes(engine: Engine, tokens: TokenCheck, secure: bool) -> list[Route]:
    """Page, files and API (the commands' routes among it); ``secure``: the port serves TLS (the
    cookie is marked Secure)."""
    api = Api(engine, tokens, Sessions(time.time), secure, time.time)
    commands = CommandRoutes(engine, api).routes()
    return Files().routes() + api.routes() + commands + Bookings(engine).routes(api)
