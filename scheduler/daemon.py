"""The scheduler daemon: gRPC (asyncio) server, store, engine and the APScheduler tick.

The server also answers the standard gRPC health checking (``grpc.health.v1.Health``: NOT_SERVING
until the store is open and the engine started, SERVING after, NOT_SERVING again once shutdown
begins; load balancers ask it without a token) and server reflection (so ``grpcurl`` works).

SIGTERM or SIGINT stops it gracefully: it stops accepting RPCs, finishes the pass in progress,
and exits 0 with everything committed.

With ``ha`` (PostgreSQL), several schedulers share one database and one leads
(``leadership.py``): the others stand by on their port until the leader's lease lapses, then
one takes over, building its state from the database as at any start. A deposed leader exits
with status ``DEPOSED``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import signal
import time
from collections.abc import Callable

import grpc
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from rota.destinations import parse_networks
from rota.scheduler.api.auth import AuthInterceptor
from rota.scheduler.api.metrics import MetricsInterceptor
from rota.scheduler.api.servicers import add_servicers
from rota.scheduler.api.standard import add_standard_services, set_serving
from rota.scheduler.api.validation import ValidationInterceptor
from rota.scheduler.config import SchedulerConfig, input_rules, policy_config
from rota.scheduler.core.services import build_services
from rota.scheduler.engine import Engine
from rota.scheduler.http import HttpServer, Response, Route
from rota.scheduler.leadership import Leadership
from rota.scheduler.mailer import Mailer, SmtpSender
from rota.scheduler.metrics import CONTENT_TYPE, SchedulerMetrics
from rota.scheduler.notifier import HttpPoster, Notifier
from rota.scheduler.policy import make_policy
from rota.scheduler.reservation_clock import ReservationClock
from rota.scheduler.store.lease import Lease
from rota.scheduler.store.schema import prepare
from rota.scheduler.store.store import Store, open_engine
from rota.scheduler.web.dashboard import dashboard_routes, port_routes
from rota.scheduler.web.identity import EngineTokens
from rota.scheduler.web.port_grants import PortGrants
from rota.tls import TLSFileError, http_ssl_context, is_loopback, server_credentials

log = logging.getLogger("rota.scheduler")

PENDING_CALLS = 20_000  # new calls gRPC holds before it refuses some (twice that: all)
SERVER_OPTIONS = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.max_receive_message_length", 4 * 2**20),  # requests; agents send logs in 64 KiB
    ("grpc.max_send_message_length", 64 * 2**20),  # large job lists and log chunks
    # Calls that arrived but that the event loop has not taken up yet. gRPC's defaults (1,000,
    # then refused at random up to 3,000) turn every agent redialling at once after a restart
    # into refused hellos and yet more redials; a hello waiting its turn costs a few KiB.
    ("grpc.server.max_pending_requests", PENDING_CALLS),
    ("grpc.server.max_pending_requests_hard_limit", 2 * PENDING_CALLS),
]
SPARE_DESCRIPTORS = 256  # the database, log files, webhooks, log streams beside connections
NOTIFY_WORKERS = 16  # webhooks posted at once
NOTIFY_POLL = 0.5  # seconds between looks for due webhooks
DEPOSED = 75  # exit status of a leader another scheduler replaced (EX_TEMPFAIL: start again)


class ListenError(RuntimeError):
    """The listen address could not be bound."""


async def serve(config: SchedulerConfig, on_ready: Callable[[int], None] | None = None) -> int:
    """Run until SIGTERM/SIGINT; return the exit code. ``on_ready`` gets the bound port."""
    policy = make_policy(config.policy, policy_config(config))
    # resolved once: it touches the SQLite file, and closing any descriptor of that file in
    # this process would drop SQLite's locks, letting another process delete our WAL
    database_url = config.resolved_database_url()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    leadership = None
    options = server_options(config)  # once: it logs when the open-file limit lowers the cap
    if config.ha:
        leadership = await _lead(config, database_url, stop, options)
        if leadership is None:
            log.info("rota scheduler stopped (it was standing by)")
            return 0
    store = Store(
        database_url,
        leadership.fence() if leadership else None,
        mail=config.mail_relay is not None,
    )
    metrics = SchedulerMetrics()
    ticker = AsyncIOScheduler()
    clock = ReservationClock(ticker)
    engine = Engine(
        build_services(store, config, time.time, policy, monotonic=time.monotonic),
        observer=metrics,
        on_reservations=clock.changed,
    )
    # the first interceptor is the outermost: refused and invalid requests are counted too;
    # authentication comes before validation, so nothing is said to a caller without a token
    interceptors = [
        MetricsInterceptor(metrics),
        AuthInterceptor(engine, time.time),
        ValidationInterceptor(input_rules(config)),
    ]
    server = grpc.aio.server(options=options, interceptors=interceptors)
    add_servicers(server, engine)
    health = await add_standard_services(server)
    port = _bind(server, config)
    await server.start()
    engine.start()
    if leadership is not None:
        leadership.start_renewing()
    ticker.add_job(
        engine.tick, "interval", seconds=config.tick_interval, max_instances=1, coalesce=True
    )
    ticker.start()
    await clock.start(engine.reservations.reservation_edges)
    notifier = Notifier(
        engine.claim_notifications,
        engine.notification_result,
        HttpPoster(
            config.notify_timeout, NOTIFY_WORKERS, parse_networks(config.webhook_allowed_networks)
        ),
        NOTIFY_WORKERS,
        NOTIFY_POLL,
    )
    notifier.start()
    mailer = None
    if config.mail_relay is not None:
        sender = SmtpSender(config.mail_relay, config.notify_timeout, NOTIFY_WORKERS)
        mailer = Mailer(engine.claim_mails, engine.mail_result, sender, NOTIFY_WORKERS, NOTIFY_POLL)
        mailer.start()
    https = await _start_http(config, engine, metrics)
    await set_serving(health)
    host = config.listen.rsplit(":", 1)[0]
    log.info(
        "rota scheduler listening on %s:%d (database %s, policy %s)",
        host,
        port,
        _safe_url(database_url),
        config.policy,
    )
    if on_ready is not None:
        on_ready(port)
    await stop.wait()
    log.info("rota scheduler stopping: no new requests, finishing the current pass")
    await health.enter_graceful_shutdown()
    ticker.shutdown(wait=False)
    await notifier.stop()
    if mailer is not None:
        await mailer.stop()
    for http in https:
        await http.stop()
    await server.stop(grace=1.0)
    await engine.stop()
    store.close()
    if leadership is not None:
        await leadership.stop()
    log.info("rota scheduler stopped")
    return 0


async def _lead(
    config: SchedulerConfig, url: str, stop: asyncio.Event, options: list[tuple[str, int]]
) -> Leadership | None:
    """Stand by until this scheduler leads (its leadership), or None when ``stop`` came first;
    ``options``: the standby's gRPC server options. The schema is checked first, as ``Store``
    does (the lease lives in it)."""
    engine = open_engine(url)
    try:
        prepare(engine)
    finally:
        engine.dispose()
    lease = Lease(url, config.ha_advertise or config.listen, config.ha_lease)
    leadership = Leadership(lease, _deposed)
    if await leadership.acquire(lambda server: _bind(server, config), stop, options):
        return leadership
    await leadership.stop()
    return None


def _deposed(why: str) -> None:
    """Exit at once (status ``DEPOSED``): another scheduler leads. Nothing this process would
    still do could be committed (its writes are fenced); its supervisor starts it again, and
    it stands by."""
    log.error("no longer the leader (%s): exiting", why)
    logging.shutdown()
    os._exit(DEPOSED)


def server_options(config: SchedulerConfig) -> list[tuple[str, int]]:
    """``SERVER_OPTIONS`` plus the caps against connection floods: at most
    ``connection_cap(config)`` connections (gRPC closes those beyond it as they arrive), a
    connection that has not finished TLS and sent its HTTP/2 settings within
    ``handshake_timeout`` is closed, and so is one with no call for ``idle_connection_timeout``
    (an agent's stream is a call for the agent's whole life: agents are never idle)."""
    return [
        *SERVER_OPTIONS,
        ("grpc.max_allowed_incoming_connections", connection_cap(config)),
        ("grpc.server_handshake_timeout_ms", int(config.handshake_timeout * 1000)),
        ("grpc.max_connection_idle_ms", int(config.idle_connection_timeout * 1000)),
    ]


def connection_cap(config: SchedulerConfig) -> int:
    """``max_connections``, lowered to what the open-file limit leaves after the HTTP ports'
    connections and ``SPARE_DESCRIPTORS`` (logged), so a flood of connections is refused by the
    cap before the process runs out of descriptors. Raises the soft limit to the hard one
    first (systemd: ``LimitNOFILE``)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the open-file limit from %d to %d: %s", soft, hard, exc)
    http = config.http_max_connections * (2 if config.web_ports_listen else 1)  # two ports
    room = soft - http - SPARE_DESCRIPTORS
    if soft == resource.RLIM_INFINITY or config.max_connections <= room:
        return config.max_connections
    cap = max(room, 16)
    log.warning(
        "max_connections %d is more than the open-file limit %d allows; serving at most %d "
        "gRPC connections (raise LimitNOFILE, or ulimit -n, to at least %d)",
        config.max_connections,
        soft,
        cap,
        config.max_connections + http + SPARE_DESCRIPTORS,
    )
    return cap


async def _start_http(
    config: SchedulerConfig, engine: Engine, metrics: SchedulerMetrics
) -> list[HttpServer]:
    """The HTTP port: ``/metrics``, the dashboard and its API, and with ``web_ports_listen``
    the jobs' web ports on their own port (TLS with the gRPC certificate when one is
    configured, on both). Without TLS only loopback addresses, unless ``insecure``. A port
    that cannot be bound is logged and left off: gRPC keeps serving."""
    try:
        tls = http_ssl_context(config.tls_cert, config.tls_key) if config.tls_cert else None
    except TLSFileError as exc:
        raise ListenError(str(exc)) from None
    tokens, grants = EngineTokens(engine), PortGrants(time.time)
    routes = [Route("GET", "/metrics", lambda _request: _scrape(engine, metrics))]
    routes += dashboard_routes(
        engine,
        tokens,
        tls is not None,
        grants,
        config.http_max_connections,
        config.web_ports_domain,
    )
    http = HttpServer(routes, config.http_max_connections, config.handshake_timeout)
    if not config.http_listen:
        return [http]
    for address in (config.http_listen, config.web_ports_listen):
        if address and tls is None and not config.insecure and not is_loopback(address):
            raise ListenError(
                f"refusing to serve HTTP on {address} without TLS: give --tls-cert and "
                "--tls-key (the dashboard's logins and tokens would cross the network in clear "
                "text), listen on 127.0.0.1, or pass --insecure"
            )
    try:
        port = await http.start(config.http_listen, tls)
    except (OSError, ValueError) as exc:
        log.error("HTTP port off: cannot listen on %s: %s", config.http_listen, exc)
        return [http]
    engine.forwards.listening(port, tls is not None)
    scheme = "https" if tls else "http"
    log.info(
        "serving the dashboard and /metrics on %s://%s:%d/",
        scheme,
        config.http_listen.rsplit(":", 1)[0],
        port,
    )
    if not config.web_ports_listen:
        return [http]
    ports = HttpServer(
        port_routes(
            engine,
            tokens,
            grants,
            tls is not None,
            config.http_max_connections,
            config.web_ports_domain,
        ),
        config.http_max_connections,
        config.handshake_timeout,
    )
    try:
        grants.port = await ports.start(config.web_ports_listen, tls)
    except (OSError, ValueError) as exc:
        log.error("jobs' web ports off: cannot listen on %s: %s", config.web_ports_listen, exc)
        return [http]
    log.info(
        "serving jobs' web ports on %s://%s:%d/",
        scheme,
        f"jID.{config.web_ports_domain}"
        if config.web_ports_domain
        else config.web_ports_listen.rsplit(":", 1)[0],
        grants.port,
    )
    return [http, ports]


async def _scrape(engine: Engine, metrics: SchedulerMetrics) -> Response:
    cluster = await engine.metrics_sample()
    return Response(200, await asyncio.to_thread(metrics.render, cluster), CONTENT_TYPE)


def _bind(server: grpc.aio.Server, config: SchedulerConfig) -> int:
    """Add the gRPC port to ``server``; the port bound. ListenError when it cannot be."""
    try:
        port = _add_port(server, config)
    except RuntimeError as exc:
        raise ListenError(f"cannot listen on {config.listen}: {exc}") from None
    if port == 0:
        raise ListenError(f"cannot listen on {config.listen} (address in use or invalid)")
    return port


def _add_port(server: grpc.aio.Server, config: SchedulerConfig) -> int:
    """TLS when configured (client certificates required with ``tls_client_ca``); without TLS
    only a loopback address, unless ``insecure`` (then a warning at every start)."""
    if config.tls_cert:
        try:
            creds = server_credentials(config.tls_cert, config.tls_key, config.tls_client_ca)
        except TLSFileError as exc:
            raise ListenError(str(exc)) from None
        log.info(
            "serving TLS%s",
            " and requiring client certificates (mutual TLS)" if config.tls_client_ca else "",
        )
        return server.add_secure_port(config.listen, creds)
    if not config.insecure and not is_loopback(config.listen):
        raise ListenError(
            f"refusing to serve {config.listen} without TLS: give --tls-cert and --tls-key "
            "(rota certs init makes them), listen on 127.0.0.1, or pass --insecure"
        )
    if config.insecure:
        log.warning(
            "INSECURE: serving %s without TLS; anyone who can reach this port can read and "
            "forge every request (docs/security.md)",
            config.listen,
        )
    return server.add_insecure_port(config.listen)


def _safe_url(url: str) -> str:
    """The database URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url
