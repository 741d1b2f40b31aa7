"""The composition root of storage: one SQLAlchemy engine, the schema, and one repository per
aggregate (``jobs``, ``nodes``, ``usage``, ``notices``, ``users``, ``reservations``,
``web_sessions``); the schema's revision is ``schema.py``'s.

Any SQLAlchemy URL works; SQLite (the embedded default) runs in WAL mode. The core is given the
repositories it uses (``rota.scheduler.core.services``), typed by the protocols of
``rota.scheduler.store.protocols``; only this module knows they share an engine.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import sessionmaker

from rota.scheduler.store.jobs import SqlJobRepository
from rota.scheduler.store.lease import Fence, leader_engine_options
from rota.scheduler.store.mails import SqlBookingMailRepository, SqlMailRepository
from rota.scheduler.store.nodes import SqlNodeRepository
from rota.scheduler.store.notices import SqlNoticeRepository
from rota.scheduler.store.partitions import SqlPartitionRepository
from rota.scheduler.store.reservations import SqlReservationRepository
from rota.scheduler.store.schema import prepare
from rota.scheduler.store.usage import SqlUsageRepository
from rota.scheduler.store.users import SqlUserRepository
from rota.scheduler.store.web_sessions import SqlWebSessionRepository
from rota.scheduler.store.writer import BackgroundWriter


def open_engine(url: str, **options: Any) -> Engine:
    """An engine for ``url`` (``options``: more ``create_engine`` keywords); SQLite
    connections are shared across threads, in WAL mode, with foreign keys on."""
    if not url.startswith("sqlite"):
        return create_engine(url, **options)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


class Store:
    """Durable state of the scheduler: the repositories on one engine (``mail``: state changes
    queue job mails, when a relay is set), on a database at this code's schema revision
    (``schema.prepare``: an empty one is migrated; an older or newer revision raises
    ``SchemaError``). With a ``fence`` (a PostgreSQL leader's, ``store/lease.py``) every commit
    is refused once another scheduler leads."""

    def __init__(self, url: str, fence: Fence | None = None, mail: bool = False) -> None:
        self.engine = open_engine(url, **(leader_engine_options(fence.epoch) if fence else {}))
        if fence is not None:
            fence.attach(self.engine)
        try:
            prepare(self.engine)
        except BaseException:
            self.engine.dispose()
            raise
        sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._writer = BackgroundWriter("rota-reasons")
        self.jobs = SqlJobRepository(self.engine, self._writer, mail)
        self.mails = SqlMailRepository(self.engine)
        self.booking_mails = SqlBookingMailRepository(self.engine)
        self.nodes = SqlNodeRepository(self.engine)
        self.usage = SqlUsageRepository(self.engine)
        self.notices = SqlNoticeRepository(self.engine)
        self.users = SqlUserRepository(sessions)
        self.reservations = SqlReservationRepository(sessions)
        self.web_sessions = SqlWebSessionRepository(self.engine)
        self.partitions = SqlPartitionRepository(sessions)

    def close(self) -> None:
        """Finish the background writes under way, then close every connection."""
        self._writer.close()
        self.engine.dispose()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
