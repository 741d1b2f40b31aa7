"""``gadmin gpu``: take a GPU out of service or return it (``resume`` after it was marked
unhealthy, by rota or by hand with ``drain``)."""

from __future__ import annotations

import argparse
from typing import Any


def add_gpu_parser(sub: Any) -> None:
    """Add ``gpu resume|drain NODE INDEX`` to gadmin's subcommands."""
    gpu = sub.add_parser("gpu", help="resume or drain one GPU of a node")
    ops = gpu.add_subparsers(dest="op", required=True)
    resume = ops.add_parser("resume", help="return an unhealthy GPU to service")
    drain = ops.add_parser("drain", help="take a GPU out of service until resumed")
    drain.add_argument("--reason", default="", help="why (shown by ginfo -G)")
    for sp in (resume, drain):
        sp.add_argument("node", help="node name")
        sp.add_argument("index", type=int, help="host GPU index (as ginfo -G shows it)")
        sp.add_argument("--scheduler", default=argparse.SUPPRESS, help="scheduler HOST:PORT")
        sp.add_argument("--ca", default=argparse.SUPPRESS, help="CA certificate (or ROTA_CA)")


def run_gpu(args: argparse.Namespace) -> int:
    """Run ``gadmin gpu ...``: one RPC, one line of output."""
    from rota.cli.client import connect, current_user
    from rota.cli.errors import CliError

    if args.index < 0:
        raise CliError("index: must be a GPU index >= 0", 2)
    with connect(args.scheduler, args.ca) as client:
        reason = getattr(args, "reason", "")
        print(client.gpu_action(args.op, args.node, args.index, current_user(), reason))
    return 0
