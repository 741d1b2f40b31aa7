"""ginfo: nodes with their state and GPUs free/total; ``-G`` or ``-N NODE`` shows every GPU."""

from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ginfo", description="Show rota nodes and GPUs.")
    p.add_argument("-G", "--gpus", action="store_true", help="one line per GPU")
    p.add_argument("-N", "--node", help="only this node, one line per GPU")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--scheduler", help="scheduler address HOST:PORT")
    p.add_argument("--ca", help="CA certificate to verify the scheduler with (or ROTA_CA)")
    args = p.parse_args(argv)
    from rota.cli.client import run_main

    return run_main(lambda: _info(args))


def _info(args: argparse.Namespace) -> int:
    from google.protobuf.json_format import MessageToDict

    from rota.cli.client import connect
    from rota.cli.render import table
    from rota.units import format_size
    from rota.v1 import rota_pb2 as pb

    with connect(args.scheduler, args.ca) as client:
        if args.node:
            nodes = [client.call(client.nodes.GetNode, pb.GetNodeRequest(name=args.node))]
        else:
            nodes = list(client.call(client.nodes.ListNodes, pb.ListNodesRequest()).nodes)
    if args.json:
        print(
            json.dumps(
                [MessageToDict(n, preserving_proto_field_name=True) for n in nodes], indent=2
            )
        )
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
                n.state,
                f"{n.gpus_free}/{n.gpus_total}",
                gpu_type,
                f"{n.inventory.cpus:.0f}",
                format_size(n.inventory.memory),
                reason,
            )
        )
    print(
        table(["NODE", "STATE", "GPUS(FREE/TOTAL)", "GPU_TYPE", "CPUS", "MEMORY", "REASON"], rows)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
