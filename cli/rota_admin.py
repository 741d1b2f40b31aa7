"""``rota admin-token``, ``rota db`` and ``rota certs``: setting up a scheduler host (its first
admin, its database's schema, its TLS certificates). Imported only when one of them runs."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from rota.cli.db_errors import database_error


def bootstrap_admin(db_url: str, name: str) -> str:
    """Make ``name`` an admin with a new token, straight in the scheduler's database (the
    first admin of a cluster; ``rota up``); returns the token."""
    from rota.scheduler.core.users import UsersService
    from rota.scheduler.store.store import Store

    store = Store(db_url)
    try:
        return UsersService(store.users, time.time).bootstrap_admin(name)
    finally:
        store.close()


def _database_url(args: argparse.Namespace, prog: str) -> tuple[str, bool] | None:
    """The database URL ``rota scheduler`` would open with the same --db, --config and
    --db-password-file, and whether they named one (else: SQLite in this user's data
    directory); None after one error line on stderr."""
    from rota.scheduler.config import load_config

    try:
        config = load_config(
            Path(args.config) if args.config else None,
            database_url=args.db,
            db_password_file=args.db_password_file,
        )
        return config.resolved_database_url(), bool(config.database_url)
    except (ValueError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return None


def cmd_admin_token(args: argparse.Namespace) -> int:
    """``rota admin-token NAME``: on the scheduler host, with access to its database."""
    from rota.credentials import credentials_file, write_credentials

    found = _database_url(args, "rota admin-token")
    if found is None:
        return 2
    url, named = found
    os.umask(0o077)
    name = args.name or current_user_name()
    try:
        missing = "" if named else _no_schema(url)
        if missing:
            print(f"rota admin-token: error: {missing}", file=sys.stderr)
            return 1
        token = bootstrap_admin(url, name)
    except Exception as exc:  # the database cannot be opened: one line, exit 1
        print(f"rota admin-token: error: {database_error(exc) or exc}", file=sys.stderr)
        return 1
    if args.install:
        path = write_credentials(credentials_file(), token)
        print(f"{name} is an admin; token written to {path} (mode 0600)")
    else:
        print(token)
    return 0


def _no_schema(url: str) -> str:
    """Why the default database ``url`` is not a rota database ("" when it is one): a token
    written to a database no scheduler reads would be refused (a database named with --db or
    database_url may be new: its schema is made). An empty SQLite file opened here is removed
    again."""
    from sqlalchemy import inspect
    from sqlalchemy.engine import make_url

    from rota.scheduler.store import schema
    from rota.scheduler.store.store import open_engine

    engine = open_engine(url)
    try:
        found = schema.status(engine)
        tables = inspect(engine).get_table_names()
    finally:
        engine.dispose()
    if found.current is not None or found.unversioned_tables:
        return ""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and not tables:
        for suffix in ("", "-wal", "-shm"):  # a file without tables holds nothing
            Path(parsed.database + suffix).unlink(missing_ok=True)
    return (
        f"{parsed.render_as_string(hide_password=True)} holds no rota database: name the "
        "scheduler's with --db, or database_url in its --config (a scheduler run by the "
        "systemd unit keeps SQLite in /var/lib/rota/scheduler.db: --db "
        "sqlite:////var/lib/rota/scheduler.db)"
    )


def cmd_db(args: argparse.Namespace) -> int:
    """``rota db upgrade|current|downgrade [REV]``: the database's schema revision, on the
    database ``rota scheduler`` with the same --db/--config would open."""
    from rota.scheduler.store import schema
    from rota.scheduler.store.store import open_engine

    prog = f"rota db {args.db_command}"
    database = _database_url(args, prog)
    if database is None:
        return 2
    url = database[0]
    os.umask(0o077)
    engine = open_engine(url)
    try:
        if args.db_command == "current":
            found = schema.status(engine)
        elif args.db_command == "upgrade":
            found = schema.upgrade(engine, args.revision)
        else:
            found = schema.downgrade(engine, args.revision, drop_all=args.drop_all)
    except Exception as exc:  # refused, unreachable, or a migration failed: one line, exit 1
        print(f"{prog}: error: {database_error(exc) or exc}", file=sys.stderr)
        return 1
    finally:
        engine.dispose()
    print(found.describe())
    return 0


def current_user_name() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def cmd_certs(args: argparse.Namespace) -> int:
    """``rota certs init``: write what is missing and list it."""
    from rota.cli.certs import init_certs
    from rota.paths import config_dir

    directory = Path(args.dir) if args.dir else config_dir() / "tls"
    try:
        written = init_certs(directory, args.scheduler_name, args.node, args.user)
    except FileExistsError as exc:
        print(
            f"rota certs: error: {exc.filename} exists; remove it to issue it again",
            file=sys.stderr,
        )
        return 2
    except (OSError, ValueError) as exc:
        print(f"rota certs: error: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    if not written:
        print(f"rota certs: nothing to do; {directory} has a CA and a scheduler certificate")
    return 0
