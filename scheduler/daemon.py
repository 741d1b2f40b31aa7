"""The scheduler daemon: gRPC (asyncio) server, store, engine and the APScheduler tick.

SIGTERM or SIGINT stops it gracefully: it stops accepting RPCs, finishes the pass in progress,
and exits 0 with everything committed.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable

import grpc
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from rota.scheduler.api.servicers import add_servicers
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.services import build_services
from rota.scheduler.engine import Engine
from rota.scheduler.policy import get_policy
from rota.scheduler.store.store import Store

log = logging.getLogger("rota.scheduler")

SERVER_OPTIONS = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.max_receive_message_length", 64 * 2**20),
    ("grpc.max_send_message_length", 64 * 2**20),
]


class ListenError(RuntimeError):
    """The listen address could not be bound."""


async def serve(config: SchedulerConfig, on_ready: Callable[[int], None] | None = None) -> int:
    """Run until SIGTERM/SIGINT; return the exit code. ``on_ready`` gets the bound port."""
    decide = get_policy(config.policy)
    store = Store(config.resolved_database_url())
    engine = Engine(build_services(store, config, time.time, decide))
    server = grpc.aio.server(options=SERVER_OPTIONS)
    add_servicers(server, engine)
    try:
        port = server.add_insecure_port(config.listen)
    except RuntimeError as exc:
        raise ListenError(f"cannot listen on {config.listen}: {exc}") from None
    if port == 0:
        raise ListenError(f"cannot listen on {config.listen} (address in use or invalid)")
    await server.start()
    engine.start()
    ticker = AsyncIOScheduler()
    ticker.add_job(
        engine.tick, "interval", seconds=config.tick_interval, max_instances=1, coalesce=True
    )
    ticker.start()
    host = config.listen.rsplit(":", 1)[0]
    log.info(
        "rota scheduler listening on %s:%d (database %s, policy %s)",
        host,
        port,
        _safe_url(config.resolved_database_url()),
        config.policy,
    )
    if on_ready is not None:
        on_ready(port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("rota scheduler stopping: no new requests, finishing the current pass")
    ticker.shutdown(wait=False)
    await server.stop(grace=1.0)
    await engine.stop()
    store.close()
    log.info("rota scheduler stopped")
    return 0


def _safe_url(url: str) -> str:
    """The database URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url
