"""``gadmin partition add|update|remove|list``: partitions at run time.

Admins add partitions beside those of the scheduler's settings file (which are read-only here)
and change or remove their own; the scheduler stores them, so they survive a restart, and
checks every field. ``list`` is for everyone. Durations take SLURM's forms (a bare number is
minutes) and ``90s``, ``30m``, ``2h``, ``3d``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from rota.cli.client import Client
from rota.cli.errors import CliError

# option dest -> PartitionSpec field
_FIELDS = {
    "nodes": "nodes",
    "labels": "labels",
    "default": "is_default",
    "default_time": "default_time",
    "max_time": "max_time",
    "default_gpus": "default_gpus",
    "max_gpus_per_job": "max_gpus_per_job",
    "allow_users": "allow_users",
    "allow_accounts": "allow_accounts",
    "priority_tier": "priority_tier",
}


def add_partition_parser(sub: Any) -> None:
    """Add ``partition add|update|remove|list`` to gadmin's subcommands."""
    part = sub.add_parser("partition", help="add, change, remove and list partitions")
    ops = part.add_subparsers(dest="op", required=True)
    add = ops.add_parser("add", help="make a partition (stored by the scheduler)")
    update = ops.add_parser("update", help="change the given fields of a partition made here")
    for sp in (add, update):
        sp.add_argument("name")
        sp.add_argument("--nodes", help="node names or glob patterns, comma separated")
        sp.add_argument("--labels", help="nodes with all these labels: k=v[,k=v...]")
        sp.add_argument(
            "--default",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="jobs naming no partition go here",
        )
        sp.add_argument("--default-time", help="time limit of jobs naming none")
        sp.add_argument("--max-time", help="longest time limit a job may ask for")
        sp.add_argument("--default-gpus", type=int, help="GPUs per node of jobs naming none")
        sp.add_argument("--max-gpus-per-job", type=int, help="most GPUs of one job (0: no limit)")
        sp.add_argument("--allow-users", help="only these users (comma separated)")
        sp.add_argument("--allow-accounts", help="only these accounts (comma separated)")
        sp.add_argument("--priority-tier", type=int, help="jobs of a higher tier go first")
    remove = ops.add_parser("remove", help="remove a partition made here (none of its jobs live)")
    remove.add_argument("name")
    lst = ops.add_parser("list", help="every partition, where it comes from, its limits")
    lst.add_argument("--json", action="store_true", help="print JSON")
    for sp in (add, update, remove, lst):
        sp.add_argument("--scheduler", default=argparse.SUPPRESS, help="scheduler HOST:PORT")
        sp.add_argument("--ca", default=argparse.SUPPRESS, help="CA certificate (or ROTA_CA)")


def run_partition(args: argparse.Namespace, client: Client) -> int:
    """Run ``gadmin partition ...``: one RPC."""
    if args.op == "list":
        _print(client.list_partitions(), args.json)
    elif args.op == "remove":
        print(client.remove_partition(args.name))
    else:
        values = _given(args)
        if args.op == "update" and not values:
            raise CliError("update: give at least one field to change (see --help)", 2)
        record = client.set_partition(args.op, args.name, values)
        verb = "added" if args.op == "add" else "updated"
        default = " (the default)" if record.is_default else ""
        print(f"Partition {record.name} {verb}{default}")
    return 0


def _given(args: argparse.Namespace) -> dict[str, Any]:
    """PartitionSpec field -> value, for the options given."""
    from rota.cli.gadmin import parse_labels
    from rota.units import parse_duration

    out: dict[str, Any] = {}
    for dest, field in _FIELDS.items():
        value = getattr(args, dest)
        if value is None:
            continue
        if dest in ("nodes", "allow_users", "allow_accounts"):
            value = [v.strip() for v in value.split(",") if v.strip()]
        elif dest == "labels":
            value = parse_labels(value)
        elif dest in ("default_time", "max_time"):
            try:
                value = parse_duration(value)
            except ValueError as exc:
                raise CliError(f"--{dest.replace('_', '-')}: {exc}", 2) from None
        out[field] = value
    return out


def _print(records: list[Any], as_json: bool) -> None:
    from rota.cli.render import table
    from rota.units import format_duration

    rows = []
    dicts = []
    for r in records:
        s = r.spec
        dicts.append(
            {
                "name": r.name,
                "default": r.is_default,
                "source": r.source,
                "nodes": list(s.nodes),
                "labels": dict(s.labels),
                "default_time": s.default_time or None,
                "max_time": s.max_time or None,
                "default_gpus": s.default_gpus,
                "max_gpus_per_job": s.max_gpus_per_job,
                "allow_users": list(s.allow_users),
                "allow_accounts": list(s.allow_accounts),
                "priority_tier": s.priority_tier,
                "changed_by": r.changed_by or None,
                "changed": r.changed or None,
            }
        )
        nodes = ",".join(s.nodes) + ("," if s.nodes and s.labels else "")
        nodes += ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        allow = ",".join([*s.allow_users, *(f"@{a}" for a in s.allow_accounts)])
        rows.append(
            (
                r.name + ("*" if r.is_default else ""),
                r.source,
                nodes or "ALL",
                format_duration(s.default_time) if s.default_time else "-",
                format_duration(s.max_time) if s.max_time else "-",
                str(s.default_gpus or "-"),
                str(s.max_gpus_per_job or "-"),
                allow or "ALL",
                str(s.priority_tier),
                time.strftime("%Y-%m-%d %H:%M", time.localtime(r.changed)) if r.changed else "-",
            )
        )
    if as_json:
        print(json.dumps(dicts, indent=2))
        return
    head = ["PARTITION", "SOURCE", "NODES", "DEFTIME", "MAXTIME", "DEFGPUS", "MAXGPUS"]
    print(table([*head, "ALLOW", "TIER", "CHANGED"], rows))
