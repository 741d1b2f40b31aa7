"""ginfo: nodes with their state (MAINT in a maintenance window), GPUs free/total and reserved now
and next; ``-G`` or ``-N NODE`` shows every GPU. On a cluster of more than one page of nodes
(500) it prints the summary unless ``--all`` or ``-t STATES`` asks for the nodes, as ``sinfo``
summarises rather than listing thousands of lines."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

SUMMARISE_ABOVE = 500  # nodes: one ListNodes page; beyond it ginfo prints the summary


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ginfo", description="Show rota nodes and GPUs.")
    p.add_argument("-G", "--gpus", action="store_true", help="one line per GPU")
    p.add_argument("-N", "--node", help="only this node, one line per GPU")
    p.add_argument(
        "-P",
        "--partitions",
        action="store_true",
        help="one line per partition and node state, as sinfo prints (default partition: *)",
    )
    p.add_argument("-p", "--partition", help="only the nodes of this partition")
    p.add_argument("-s", "--summary", action="store_true", help="only counts: nodes by state, GPUs")
    p.add_argument(
        "-a",
        "--all",
        action="store_true",
        help="list every node, however many (default: up to 500)",
    )
    p.add_argument(
        "-t",
        "--states",
        type=_states,
        default=[],
        help="only nodes in these states, comma-separated (IDLE,MIXED,ALLOCATED,DRAINING,DRAINED,DOWN)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rota.cli.errors import run_main

    return run_main(lambda: _info(args))


def _info(args: argparse.Namespace) -> int:
    from rota.cli.client import as_dict, connect
    from rota.cli.render import table
    from rota.units import format_size

    with connect(args.scheduler, args.ca) as client:
        if args.partitions or args.partition:
            return _partition_view(client, args)
        if args.summary and not args.node:
            return _summary(client.node_summary(), args.json)
        listed = args.node or args.all or args.states or args.gpus or args.json
        if not listed:
            summary = client.node_summary()
            if summary.nodes > SUMMARISE_ABOVE:
                _summary(summary, False)
                print(
                    f"{summary.nodes} nodes: `ginfo --all` lists every one, "
                    "`ginfo -t DOWN,DRAINED` those in some states, `ginfo -N NODE` one"
                )
                return 0
        nodes = [client.get_node(args.node)] if args.node else client.list_nodes(args.states)
    if args.json:
        print(json.dumps([as_dict(n) for n in nodes], indent=2))
        return 0
    from rota.cli.ginfo_gpus import gpu_note

    if args.gpus or args.node:
        from rota.cli.ginfo_gpus import gpu_table, node_detail

        print(gpu_table(nodes))
        if args.node:
            print()
            print(node_detail(nodes[0]))
        return 0
    rows = []
    for n in nodes:
        types = sorted({g.name for g in n.inventory.gpus}) or ["-"]
        gpu_type = ",".join(types) + (" (simulated)" if n.inventory.simulated else "")
        since = (
            f" since {time.strftime('%H:%M', time.localtime(n.reason_time))}"
            if n.reason_time
            else ""
        )
        by = f" by {n.reason_by}" if n.reason_by else ""
        reason = f"{n.reason}{by}{since}" if n.reason else (n.inventory.note or gpu_note(n))
        rows.append(
            (
                n.name,
                _state(n),
                f"{n.gpus_free}/{n.gpus_total}",
                gpu_type,
                f"{n.inventory.cpus:.0f}",
                format_size(n.inventory.memory),
                reserved(n),
                reason,
            )
        )
    header = ["NODE", "STATE", "GPUS(FREE/TOTAL)", "GPU_TYPE", "CPUS", "MEMORY", "RESERVED"]
    print(table([*header, "REASON"], rows))
    return 0


def _partition_view(client: Any, args: argparse.Namespace) -> int:
    """``-P``: the sinfo-like partition lines; ``-p NAME`` alone: that partition's nodes."""
    from rota.cli.errors import CliError
    from rota.cli.ginfo_partitions import partition_rows
    from rota.cli.render import table

    partitions = client.partitions()
    names = [p.name for p in partitions]
    if args.partition and args.partition not in names:
        raise CliError(f"unknown partition {args.partition!r}; partitions: {', '.join(names)}", 2)
    nodes = client.list_nodes(args.states)
    if args.partition:
        nodes = [n for n in nodes if args.partition in n.partitions]
    if args.partitions:
        rows = partition_rows(partitions, nodes, args.partition or "")
        print(table(["PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE", "NODELIST"], rows))
        return 0
    rows = [(n.name, _state(n), f"{n.gpus_free}/{n.gpus_total}", reserved(n)) for n in nodes]
    print(table(["NODE", "STATE", "GPUS(FREE/TOTAL)", "RESERVED"], rows))
    return 0


def _states(text: str) -> list[str]:
    """``-t``'s comma-separated states, upper-cased; the scheduler checks them."""
    return [s.strip().upper() for s in text.split(",") if s.strip()]


def _state(n: Any) -> str:
    """The node's state; MAINT while a maintenance reservation is open on it (``+MAINT`` when
    it is not idle, e.g. jobs run there under IGNORE_JOBS)."""
    if not n.maintenance:
        return str(n.state)
    return "MAINT" if n.state == "IDLE" else f"{n.state}+MAINT"


def reserved(n: Any) -> str:
    """GPUs reserved now and in the next window: ``4 now (lab); 2 at Mon 09:00 (exp)``."""
    parts = []
    if n.gpus_reserved:
        parts.append(f"{n.gpus_reserved} now ({','.join(n.reserved_by)})")
    if n.reserved_next_start:
        at = time.strftime("%a %H:%M", time.localtime(n.reserved_next_start))
        parts.append(f"{n.gpus_reserved_next} at {at} ({','.join(n.reserved_next_by)})")
    return "; ".join(parts) or "-"


def _summary(summary: object, as_json: bool) -> int:
    """Print the counts over every node (one small reply whatever the cluster size)."""
    from rota.cli.client import as_dict
    from rota.cli.render import table

    counts = as_dict(summary)
    if as_json:
        print(json.dumps(counts, indent=2))
        return 0
    states = counts.get("states", {})
    rows = [(state, str(n)) for state, n in sorted(states.items())]
    print(table(["STATE", "NODES"], rows))
    gpus = (
        f"nodes {counts.get('nodes', 0)}, GPUs {counts.get('gpus_free', 0)} free of "
        f"{counts.get('gpus_total', 0)}, {counts.get('gpus_unhealthy', 0)} unhealthy"
    )
    print(gpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
