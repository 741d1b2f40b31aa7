"""gadmin: administer nodes (register with a join token, drain, resume, remove, list), GPUs,
partitions, users and their tokens, and read the audit log. Admins only: the scheduler checks the caller's
token (``rota.credentials``) and records who made each change."""

from __future__ import annotations

import argparse
import sys
import time

from rota.cli.subcommands import name_subcommands


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gadmin", description="Administer rota nodes.")
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    sub = p.add_subparsers(dest="area", required=True)
    node = sub.add_parser("node", help="register, drain, resume, remove and list nodes")
    ops = node.add_subparsers(dest="op", required=True)

    add = ops.add_parser("add", help="register a node and print its join token (once)")
    add.add_argument("name")
    add.add_argument("--labels", help="admin labels k=v[,k=v...] (they win over the agent's)")
    add.add_argument(
        "--rotate-token",
        action="store_true",
        help="the node exists: issue a new token (the old one stops working)",
    )
    add.add_argument("--parsable", action="store_true", help="print only the token")

    drain = ops.add_parser("drain", help="stop placing jobs on a node; running jobs finish")
    drain.add_argument("name")
    drain.add_argument("--reason", required=True, help="why (shown by ginfo)")

    resume = ops.add_parser("resume", help="let a drained node take jobs again")
    resume.add_argument("name")

    remove = ops.add_parser("remove", help="forget a node; its agent is refused from then on")
    remove.add_argument("name")
    remove.add_argument(
        "--force",
        action="store_true",
        help="even while jobs run: requeue those that allow it, end the others NODE_FAIL",
    )

    lst = ops.add_parser("list", help="nodes with state, reason, who set it and since when")
    lst.add_argument("--json", action="store_true", help="print JSON")
    for sp in (add, drain, resume, remove, lst):
        sp.add_argument("--scheduler", default=argparse.SUPPRESS, help="scheduler HOST:PORT")
        sp.add_argument("--ca", default=argparse.SUPPRESS, help="CA certificate (or ROTA_CA)")
    from rota.cli.gadmin_gpu import add_gpu_parser

    add_gpu_parser(sub)
    from rota.cli.gadmin_user import add_user_parsers

    add_user_parsers(sub)
    from rota.cli.gadmin_partition import add_partition_parser

    add_partition_parser(sub)
    return p


def parse_labels(text: str | None) -> dict[str, str]:
    """``k=v,k2=v2`` -> dict; CliError (exit 2) on a malformed item."""
    from rota.cli.errors import CliError

    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--labels: expected k=v[,k=v...], got {item.strip()!r}", 2)
        out[key.strip()] = value.strip()
    return out


def main(argv: list[str] | None = None) -> int:
    args = name_subcommands(build_parser()).parse_args(argv)
    from rota.cli.errors import run_main

    return run_main(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    from rota.cli.client import connect, current_user

    if args.area == "gpu":
        from rota.cli.gadmin_gpu import run_gpu

        return run_gpu(args)
    if args.area in ("user", "audit"):
        from rota.cli.gadmin_user import run_audit, run_user

        with connect(args.scheduler, args.ca) as client:
            return run_user(args, client) if args.area == "user" else run_audit(args, client)
    if args.area == "partition":
        from rota.cli.gadmin_partition import run_partition

        with connect(args.scheduler, args.ca) as client:
            return run_partition(args, client)
    user = current_user()
    labels = parse_labels(getattr(args, "labels", None))
    with connect(args.scheduler, args.ca) as client:
        if args.op == "add":
            reply = client.add_node(args.name, labels, user, args.rotate_token)
            if args.parsable:
                print(reply.token)
            else:
                what = "has a new join token" if args.rotate_token else "registered"
                print(f"Node {reply.name} {what}. Its join token (shown only this once):")
                print(reply.token)
                print(
                    f"Start its agent with: rota agent --node {reply.name} --token-file FILE "
                    "(or ROTA_NODE_TOKEN=TOKEN)"
                )
        elif args.op == "drain":
            node = client.drain_node(args.name, args.reason, user)
            print(f"Node {node.name} {node.state}: {node.reason}")
        elif args.op == "resume":
            node = client.resume_node(args.name, user)
            print(f"Node {node.name} resumed ({node.state})")
        elif args.op == "remove":
            result = client.remove_node(args.name, args.force, user)
            print(f"Node {args.name} removed")
            if result.requeued:
                print(f"Requeued job(s): {' '.join(result.requeued)}")
            if result.failed:
                print(f"Ended NODE_FAIL: {' '.join(result.failed)}")
        else:
            nodes = client.list_nodes()
            _print_nodes(nodes, args.json)
    return 0


def _print_nodes(nodes: list, as_json: bool) -> None:  # type: ignore[type-arg]
    import json

    from rota.cli.render import table

    if as_json:
        print(
            json.dumps(
                [
                    {
                        "name": n.name,
                        "state": n.state,
                        "reason": n.reason,
                        "reason_by": n.reason_by,
                        "since": n.reason_time or None,
                        "labels": dict(n.labels),
                        "engine_healthy": n.engine_healthy,
                    }
                    for n in nodes
                ],
                indent=2,
            )
        )
        return
    rows = [
        (
            n.name,
            n.state,
            n.reason or "-",
            n.reason_by or "-",
            time.strftime("%Y-%m-%d %H:%M", time.localtime(n.reason_time))
            if n.reason_time
            else "-",
            ",".join(f"{k}={v}" for k, v in sorted(n.labels.items())) or "-",
        )
        for n in nodes
    ]
    print(table(["NODE", "STATE", "REASON", "BY", "SINCE", "LABELS"], rows))


if __name__ == "__main__":
    sys.exit(main())
