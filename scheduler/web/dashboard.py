"""The routes the HTTP port serves for people: the dashboard's page and files at ``/`` and its
JSON API at ``/api/v1`` (reservations and their calendar feed included), a running job's
terminal, the door to its web ports (served on their own origin by ``port_routes``), and starting
an interactive session; sessions are stored with the engine's users."""

from __future__ import annotations

import time

from rota.scheduler.engine import Engine
from rota.scheduler.http import MAX_CONNECTIONS, Route
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
from rota.scheduler.web.port_door import PortDoor
from rota.scheduler.web.port_grants import PortGrants
from rota.scheduler.web.ports import WebPorts
from rota.scheduler.web.sessions import Sessions
from rota.scheduler.web.slots import UserSlots, per_user
from rota.scheduler.web.terminal import Terminal


def dashboard_routes(
    engine: Engine,
    tokens: TokenCheck,
    secure: bool,
    grants: PortGrants | None = None,
    max_connections: int = MAX_CONNECTIONS,
    ports_domain: str = "",
) -> list[Route]:
    """Page, files and API (the commands' routes among it); ``secure``: the port serves TLS (the
    cookie is marked Secure); ``grants``: the job ports' tickets, shared with ``port_routes``
    (None: job web ports are not served); ``max_connections``: the port's (one user's open
    terminals are bounded by it, ``slots``); ``ports_domain``: ``web_ports_domain``."""
    sessions = Sessions(engine.users.web_sessions, time.time)
    grants = grants or PortGrants(time.time)
    api = Api(engine, tokens, sessions, secure, time.time, grants.end_session)
    slots = UserSlots(per_user(max_connections))  # a user's terminals and raw forwards
    pages = (
        JobActions(engine).routes(api)
        + Accounting(engine).routes(api)
        + Bookings(engine, api).routes()
        + IcalFeed(engine).routes(api)
        + CommandRoutes(engine, api).routes()
        + Terminal(engine, slots).routes(api)
        + PortDoor(engine, grants, secure, ports_domain).routes(api)
        + RawForwards(engine, slots).routes(api)
        + SessionLauncher(engine).routes(api)
    )
    return Files().routes() + api.routes() + pages


def port_routes(
    engine: Engine,
    tokens: TokenCheck,
    grants: PortGrants,
    secure: bool,
    max_connections: int = MAX_CONNECTIONS,
    domain: str = "",
) -> list[Route]:
    """The routes of the ports origin (``web_ports_listen``): jobs' web ports, nothing else;
    ``max_connections``: the port's (one user's open requests are bounded by it);
    ``domain``: ``web_ports_domain`` (each job on its own host), "" for one shared origin."""
    slots = UserSlots(per_user(max_connections))
    return WebPorts(engine, tokens, grants, secure, time.time, slots, domain).routes()
