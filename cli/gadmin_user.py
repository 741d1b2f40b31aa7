"""``gadmin user`` (add, update, list, revoke, token) and ``gadmin audit``: admins only.

A token is printed once (only its hash is kept). With ``--install``, run as root on a shared
host, it is written instead to the user's ``~/.config/rota/credentials``, owned by them, mode
0600.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime
from typing import Any

from rota.cli.client import Client
from rota.cli.errors import CliError


def add_user_parsers(sub: Any) -> None:
    """Add ``user add|update|list|revoke|token`` and ``audit`` to gadmin's subcommands."""
    user = sub.add_parser("user", help="users and their tokens")
    ops = user.add_subparsers(dest="op", required=True)
    add = ops.add_parser("add", help="create a user and print their token (once)")
    add.add_argument("name")
    add.add_argument("--admin", action="store_true", help="may administer everything")
    add.add_argument(
        "--account",
        action="append",
        default=[],
        metavar="A",
        help="an account the user may submit to (repeatable; none: only their name)",
    )
    add.add_argument("--default-account", default="", help="account of jobs that name none")
    add.add_argument("--uid", type=int, help="uid their containers run as (with --gid)")
    add.add_argument("--gid", type=int, help="gid their containers run as (with --uid)")
    update = ops.add_parser("update", help="change a user's accounts, uid:gid or admin flag")
    update.add_argument("name")
    update.add_argument(
        "--account",
        action="append",
        metavar="A",
        help="their accounts from now on (repeatable; replaces the list)",
    )
    update.add_argument("--default-account", help="account of jobs that name none ('': none)")
    update.add_argument("--uid", type=int, help="uid their containers run as (with --gid)")
    update.add_argument("--gid", type=int, help="gid their containers run as (with --uid)")
    update.add_argument(
        "--no-ids", action="store_true", help="forget uid:gid (the node's passwd entry decides)"
    )
    update.add_argument(
        "--admin", action=argparse.BooleanOptionalAction, help="may administer everything"
    )
    lst = ops.add_parser("list", help="users, admin flag, accounts, uid:gid, revoked")
    lst.add_argument("--json", action="store_true", help="print JSON")
    revoke = ops.add_parser("revoke", help="the user's token stops working now")
    revoke.add_argument("name")
    token = ops.add_parser("token", help="a new token for the user (the old one stops working)")
    token.add_argument("name")
    for sp in (add, token):
        sp.add_argument(
            "--install",
            action="store_true",
            help="(as root) write the token to the user's ~/.config/rota/credentials instead",
        )
        sp.add_argument("--parsable", action="store_true", help="print only the token")
    audit = sub.add_parser("audit", help="admin actions and refused requests")
    audit.add_argument("--since", help="from this time: 2025-01-31, '2025-01-31 12:00', or 2h ago")
    audit.add_argument("--limit", type=int, default=1000, help="at most this many (newest)")
    audit.add_argument("--json", action="store_true", help="print JSON")
    for sp in (add, update, lst, revoke, token, audit):
        sp.add_argument("--scheduler", default=argparse.SUPPRESS, help="scheduler HOST:PORT")
        sp.add_argument("--ca", default=argparse.SUPPRESS, help="CA certificate (or ROTA_CA)")


def run_user(args: argparse.Namespace, client: Client) -> int:
    """Run ``gadmin user ...``."""
    if args.op in ("add", "token"):
        # where --install writes, checked before a token is made (it is shown only once)
        home = _install_target(args.name) if args.install else None
    if args.op == "add":
        if (args.uid is None) != (args.gid is None):
            raise CliError("--uid and --gid: give both or neither", 2)
        reply = client.add_user(
            args.name,
            args.admin,
            args.account,
            args.default_account,
            -1 if args.uid is None else args.uid,
            -1 if args.gid is None else args.gid,
        )
        _show_token(reply, args, home, "created")
    elif args.op == "update":
        user = client.update_user(args.name, **_changes(args))
        admin = "an admin" if user.admin else "not an admin"
        accounts = ",".join(user.accounts) or "-"
        ids = f"{user.uid}:{user.gid}" if user.uid >= 0 else "-"
        print(
            f"User {user.name} updated: accounts {accounts}, default account "
            f"{user.default_account or '-'}, uid:gid {ids}, {admin}"
        )
    elif args.op == "token":
        reply = client.new_token(args.name)
        _show_token(reply, args, home, "has a new token (the old one no longer works)")
    elif args.op == "revoke":
        user = client.revoke_user(args.name)
        print(f"User {user.name} revoked: their token no longer works")
    else:
        _print_users(client.list_users(), args.json)
    return 0


def _changes(args: argparse.Namespace) -> dict[str, Any]:
    """``UpdateUserRequest`` fields of what the options of ``gadmin user update`` set."""
    changes: dict[str, Any] = {}
    if args.account is not None:
        changes.update(set_accounts=True, accounts=args.account)
    if args.default_account is not None:
        changes.update(set_default_account=True, default_account=args.default_account)
    if (args.uid is None) != (args.gid is None):
        raise CliError("--uid and --gid: give both or neither", 2)
    if args.uid is not None and args.no_ids:
        raise CliError("--uid/--gid and --no-ids: give one or the other", 2)
    if args.uid is not None or args.no_ids:
        uid, gid = (-1, -1) if args.no_ids else (args.uid, args.gid)
        changes.update(set_ids=True, uid=uid, gid=gid)
    if args.admin is not None:
        changes.update(set_admin=True, admin=args.admin)
    if not changes:
        raise CliError(
            "nothing to change: give --account, --default-account, --uid/--gid, --no-ids, "
            "--admin or --no-admin",
            2,
        )
    return changes


def _show_token(reply: Any, args: argparse.Namespace, home: Any, what: str) -> None:
    if home is not None:
        path = install_token(home, reply.token)
        print(f"User {reply.user.name} {what}; token written to {path} (mode 0600)")
    elif args.parsable:
        print(reply.token)
    else:
        print(f"User {reply.user.name} {what}. Their token (shown only this once):")
        print(reply.token)
        print("They put it in ~/.config/rota/credentials (chmod 600) or ROTA_TOKEN.")


def _install_target(name: str) -> Any:
    """The passwd entry of local user ``name``; CliError unless this process may write their
    credentials (root, or that user)."""
    import os
    import pwd

    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise CliError(f"--install: {name} has no account on this host", 1) from None
    if os.geteuid() not in (0, entry.pw_uid):
        raise CliError("--install: run as root to write another user's credentials", 1)
    return entry


def install_token(entry: Any, token: str) -> str:
    """Write ``token`` to the credentials file of the user of passwd ``entry``, owned by them,
    mode 0600 (written with their rights: ``install_credentials``)."""
    from pathlib import Path

    from rota.credentials import FILE_NAME, install_credentials

    path = Path(entry.pw_dir) / ".config" / "rota" / FILE_NAME
    try:
        install_credentials(path, token, entry.pw_uid, entry.pw_gid)
    except OSError as exc:
        raise CliError(
            f"--install: cannot write {path}: {exc.strerror}; the token was not kept: "
            "fix that, then `gadmin user token NAME --install`",
            1,
        ) from None
    return str(path)


def _print_users(users: list[Any], as_json: bool) -> None:
    from rota.cli.render import table

    def ids(u: Any) -> str:
        return f"{u.uid}:{u.gid}" if u.uid >= 0 else "-"

    if as_json:
        data = [
            {
                "name": u.name,
                "admin": u.admin,
                "accounts": list(u.accounts),
                "default_account": u.default_account,
                "uid": u.uid if u.uid >= 0 else None,
                "gid": u.gid if u.gid >= 0 else None,
                "revoked": u.revoked,
            }
            for u in users
        ]
        print(json.dumps(data, indent=2))
        return
    rows = [
        (
            u.name,
            "yes" if u.admin else "-",
            ",".join(u.accounts) or u.name,
            u.default_account or "-",
            ids(u),
            "REVOKED" if u.revoked else "active",
        )
        for u in users
    ]
    print(table(["USER", "ADMIN", "ACCOUNTS", "DEFAULT", "UID:GID", "STATE"], rows))


def parse_since(text: str | None, now: float) -> float:
    """``--since``: ``Nh``/``Nm``/``Nd`` (ago), Unix seconds, or any time of ``rota.when``'s
    grammar (local time); CliError (exit 2) otherwise."""

    if not text:
        return 0.0
    value = text.strip().removesuffix(" ago")
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if value[-1:] in units and value[:-1].replace(".", "", 1).isdigit():
        return now - float(value[:-1]) * units[value[-1]]
    if value.replace(".", "", 1).isdigit():
        return float(value)
    from rota.when import parse_when

    try:
        return parse_when(value, datetime.fromtimestamp(now).astimezone(), "--since")
    except ValueError as exc:
        raise CliError(f"{exc}; or 2h (two hours ago) or Unix seconds", 2) from None


def run_audit(args: argparse.Namespace, client: Client) -> int:
    """Run ``gadmin audit``."""
    if args.limit < 1:
        raise CliError("--limit: must be >= 1", 2)
    entries = client.list_audit(parse_since(args.since, time.time()), args.limit)
    if args.json:
        data = [
            {
                "time": e.time,
                "user": e.user,
                "action": e.action,
                "target": e.target,
                "peer": e.peer,
                "allowed": e.allowed,
                "detail": e.detail,
            }
            for e in entries
        ]
        print(json.dumps(data, indent=2))
        return 0
    from rota.cli.render import table

    rows = [
        (
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time)),
            e.user or "(no token)",
            e.action,
            e.target or "-",
            e.peer or "-",
            "ok" if e.allowed else "REFUSED",
            e.detail or "-",
        )
        for e in entries
    ]
    print(table(["TIME", "USER", "ACTION", "TARGET", "FROM", "RESULT", "DETAIL"], rows))
    return 0
