"""The database's schema revision: Alembic migrations shipped in ``store/migrations/``.

``prepare`` is what the scheduler runs at every start (through ``Store``): an empty database is
migrated to the newest revision, a database made by rota 0.1 (its tables, no revision) is
stamped with the baseline, and anything but the newest revision is refused with what to do.
``upgrade``, ``downgrade`` and ``status`` are ``rota db upgrade|downgrade|current``. Nothing
here ever drops a table unless a downgrade below the baseline is asked for by name.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, Index, MetaData, Table, create_engine, inspect, text

BASELINE = "0001"  # the schema rota 0.1 made with create_all
SCRIPTS = "rota.scheduler.store:migrations"
VERSION_TABLE = "alembic_version"
PG_LOCK = 0x726F7461  # "rota": one migrator at a time on PostgreSQL (a standby starting too)

log = logging.getLogger(__name__)


class SchemaError(RuntimeError):
    """The database's schema is not one this rota can run on; the message says what to do."""


@dataclass(frozen=True)
class SchemaStatus:
    """Where a database stands: its revision (None: none recorded), this code's newest, whether
    it holds rota's tables without a revision (made by rota 0.1), and whether this code knows
    its revision."""

    current: str | None
    head: str
    unversioned_tables: bool
    known: bool

    def describe(self) -> str:
        """One line for ``rota db current``."""
        if self.unversioned_tables:
            return (
                f"unversioned (made by rota 0.1; `rota db upgrade` stamps it {BASELINE} and "
                f"upgrades it to {self.head})"
            )
        if self.current is None:
            return f"empty (`rota db upgrade` or the scheduler's first start creates {self.head})"
        if self.current == self.head:
            return f"{self.current} (head)"
        if not self.known:
            return f"{self.current} (newer than this rota, whose newest is {self.head})"
        return f"{self.current} (this rota's head is {self.head}: run `rota db upgrade`)"


def prepare(engine: Engine) -> None:
    """Make ``engine``'s database one the scheduler can run on, or raise ``SchemaError``.

    Empty: migrated to head. rota 0.1's tables without a revision: stamped ``BASELINE`` (after
    checking its tables and columns), never rebuilt. Then the revision must be head: an older
    one is refused with "run `rota db upgrade`", one this code does not know naming both."""
    with _migrating(engine) as conn:
        if _is_empty(conn):
            command.upgrade(_config(conn), "head")
            log.info("empty database: created schema revision %s", _revision(conn))
            return
        _adopt(conn)
        found = _status(conn)
    if found.current == found.head:
        return
    if found.known:
        raise SchemaError(
            f"the database is at schema revision {found.current} and this rota needs "
            f"{found.head}: run `rota db upgrade` (with the scheduler's --db or --config), "
            "then start the scheduler again"
        )
    raise SchemaError(
        f"the database is at schema revision {found.current}, newer than this rota knows "
        f"(its newest is {found.head}): run the rota that upgraded it, or downgrade the "
        f"database with that rota's `rota db downgrade {found.head}`"
    )


def status(engine: Engine) -> SchemaStatus:
    """Where ``engine``'s database stands; changes nothing."""
    with engine.connect() as conn:
        return _status(conn)


def upgrade(engine: Engine, target: str = "head") -> SchemaStatus:
    """Migrate to ``target`` (rota 0.1's database is stamped ``BASELINE`` first); the status
    after. A revision this code does not know raises ``SchemaError``."""
    with _migrating(engine) as conn:
        _adopt(conn)
        before = _require_known(conn)
        command.upgrade(_config(conn), target)
        after = _status(conn)
        if before != after.current:
            log.info("database schema upgraded from %s to %s", before or "empty", after.current)
        return after


def downgrade(engine: Engine, target: str, drop_all: bool = False) -> SchemaStatus:
    """Migrate down to ``target`` (a revision, ``-N`` or ``base``); the status after. Going
    below ``BASELINE`` drops every table, so it needs ``drop_all``."""
    with _migrating(engine) as conn:
        _adopt(conn)
        current = _require_known(conn)
        if _drops_everything(current, target) and not drop_all:
            raise SchemaError(
                f"downgrading to {target} goes below the baseline {BASELINE} and drops every "
                "table with its data; pass --drop-all if that is what you want"
            )
        command.downgrade(_config(conn), target)
        after = _status(conn)
        log.info("database schema downgraded from %s to %s", current, after.current or "empty")
        return after


def _config(conn: Connection | None = None) -> Config:
    """Alembic's settings: the shipped scripts and, for ``env.py``, the open connection."""
    config = Config()
    config.set_main_option("script_location", SCRIPTS)
    config.attributes["connection"] = conn
    return config


def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(_config())


@contextmanager
def _migrating(engine: Engine) -> Iterator[Connection]:
    """One transaction to migrate in. PostgreSQL: holding the migration lock. SQLite: foreign
    keys off meanwhile, since altering a table there copies it (batch mode), and dropping the
    old copy of a referenced table would fail (the pragma only takes outside a transaction)."""
    with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            conn.commit()
        try:
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK})
                yield conn
        finally:
            if sqlite:
                conn.exec_driver_sql("PRAGMA foreign_keys=ON")
                conn.commit()


def _rota_tables(conn: Connection) -> set[str]:
    return set(inspect(conn).get_table_names()) - {VERSION_TABLE}


def _revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def _is_empty(conn: Connection) -> bool:
    return _revision(conn) is None and not _rota_tables(conn)


def _status(conn: Connection) -> SchemaStatus:
    scripts = _scripts()
    head = scripts.get_current_head()
    assert head is not None  # the package ships at least the baseline
    current = _revision(conn)
    known = current is None or current in {s.revision for s in scripts.walk_revisions()}
    return SchemaStatus(current, head, current is None and bool(_rota_tables(conn)), known)


def _require_known(conn: Connection) -> str | None:
    found = _status(conn)
    if not found.known:
        raise SchemaError(
            f"the database is at schema revision {found.current}, newer than this rota knows "
            f"(its newest is {found.head}): use the rota that upgraded it"
        )
    return found.current


def _drops_everything(current: str | None, target: str) -> bool:
    """Whether downgrading from ``current`` to ``target`` (``base``, ``REV``, ``-N`` or
    ``REV-N``, as Alembic reads them) goes below the baseline, dropping every table."""
    if target == "base":
        return current is not None
    start, minus, steps = target.rpartition("-")
    if not minus or not steps.isdigit():
        return False
    scripts, revision = _scripts(), (start or current)
    for _ in range(int(steps)):
        if revision is None:
            return False
        down = scripts.get_revision(revision).down_revision
        revision = down if isinstance(down, str) or down is None else down[0]
    return revision is None and current is not None


def _adopt(conn: Connection) -> None:
    """Stamp rota 0.1's database (its tables, no revision) with ``BASELINE``: its tables and
    columns must be the baseline's; indexes rota 0.1 would have added are created."""
    found = _status(conn)
    if not found.unversioned_tables:
        return
    baseline = _baseline_reference()
    mine = inspect(conn)
    have = set(mine.get_table_names())
    missing = sorted(
        [t for t in baseline if t not in have]
        + [
            f"{t}.{c}"
            for t, (columns, _) in baseline.items()
            if t in have
            for c in sorted(columns - {col["name"] for col in mine.get_columns(t)})
        ]
    )
    if missing:
        raise SchemaError(
            "the database has rota tables but no schema revision, and lacks what rota 0.1 "
            f"made ({', '.join(missing)}): it was not made by rota 0.1; restore a backup "
            "or start from an empty database"
        )
    for table, (_, indexes) in baseline.items():
        present = {ix["name"] for ix in mine.get_indexes(table)}
        for name, columns in indexes.items():
            if name not in present:
                reflected = Table(table, MetaData(), autoload_with=conn)
                Index(name, *(reflected.c[c] for c in columns)).create(conn)
    command.stamp(_config(conn), BASELINE)
    log.info("database made by rota 0.1: stamped schema revision %s", BASELINE)


def _baseline_reference() -> dict[str, tuple[set[str], dict[str, list[str]]]]:
    """The baseline's tables: table -> (column names, index name -> columns), read from a
    scratch in-memory database migrated to ``BASELINE``."""
    scratch = create_engine("sqlite://")
    try:
        with scratch.begin() as conn:
            command.upgrade(_config(conn), BASELINE)
            found = inspect(conn)
            return {
                table: (
                    {c["name"] for c in found.get_columns(table)},
                    {
                        str(ix["name"]): [str(c) for c in ix["column_names"]]
                        for ix in found.get_indexes(table)
                    },
                )
                for table in _rota_tables(conn)
            }
    finally:
        scratch.dispose()
