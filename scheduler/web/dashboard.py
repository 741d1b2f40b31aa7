"""The routes the HTTP port serves for people: the dashboard's page and files at ``/`` and its
JSON API at ``/api/v1`` (reservations and their calendar feed included), a running job's
terminal and its web ports, and starting an interactive session; sessions are stored with the engine's users."""

from __future__ import annotations

import time

from rota.scheduler.engine import Engine
from rota.scheduler.http import Route
from rota.scheduler.web.accounting import Accounting
from rota.scheduler.web.actions import JobActions
from rota.scheduler.web.api import Api
from rota.scheduler.web.bookings import Bookings
from rota.scheduler.web.commands import CommandRoutes
from rota.scheduler.web.files import Files
from rota.scheduler.web.forward import RawForwards
from rota.scheduler.web.ical import IcalFeed
from rota.scheduler.web.identity import TokenCheck
from rota.scheduler.web.launch import SessionLauncher
from rota.scheduler.web.ports import WebPorts
from rota.scheduler.web.sessions import Sessions
from rota.scheduler.web.terminal import Terminal


def dashboard_routes(engine: Engine, tokens: TokenCheck, secure: bool) -> list[Route]:
    """Page, files and API (the commands' routes among it); ``secure``: the port serves TLS (the
    cookie is marked Secure)."""
    sessions = Sessions(engine.users.web_sessions, time.time)
    api = Api(engine, tokens, sessions, secure, time.time)
    pages = (
        JobActions(engine).routes(api)
        + Accounting(engine).routes(api)
        + Bookings(engine, api).routes()
        + IcalFeed(engine).routes(api)
        + CommandRoutes(engine, api).routes()
        + Terminal(engine).routes(api)
        + WebPorts(engine).routes(api)
        + RawForwards(engine).routes(api)
        + SessionLauncher(engine).routes(api)
    )
    return Files().routes() + api.routes() + pages
