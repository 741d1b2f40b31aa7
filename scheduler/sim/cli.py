"""``rota simulate TRACE.csv --nodes N --gpus-per-node G [--policy NAME] ...``."""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time

from rota.scheduler.policy import DEFAULT_POLICY, POLICIES, get_policy
from rota.scheduler.sim.engine import simulate
from rota.scheduler.sim.metrics import FIELDS, summarise
from rota.scheduler.sim.trace import TraceError, derive_limits, read_trace


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rota simulate", description="Replay a job trace through a scheduling policy."
    )
    p.add_argument("trace", help="Philly or generic CSV (see docs/simulator.md)")
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--gpus-per-node", type=int, required=True)
    p.add_argument("--policy", default=DEFAULT_POLICY, choices=sorted(POLICIES))
    p.add_argument("--seed", type=int, default=0, help="seed of the derived time limits")
    p.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    p.add_argument("--csv", metavar="OUT", help="write one row per job as CSV")
    p.add_argument("--limit-jobs", type=int, metavar="N", help="first N jobs only")
    return p


def main(argv: list[str]) -> int:
    """Run one simulation and print its figures; exit code 0, 1 (bad trace) or 2 (usage)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.nodes < 1 or args.gpus_per_node < 1:
        print("rota simulate: --nodes and --gpus-per-node must be >= 1", file=sys.stderr)
        return 2
    try:
        jobs = derive_limits(read_trace(args.trace, args.limit_jobs), args.seed)
    except (OSError, TraceError) as exc:
        print(f"rota simulate: {exc}", file=sys.stderr)
        return 1
    began = time.perf_counter()
    result = simulate(
        jobs,
        get_policy(args.policy),
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        oracle=args.policy == "sjf-oracle",
    )
    figures = {"policy": args.policy, "nodes": args.nodes, "gpus_per_node": args.gpus_per_node}
    figures |= summarise(result)
    figures["wall_seconds"] = round(time.perf_counter() - began, 2)
    for name in ("policy", *FIELDS, "wall_seconds"):
        print(f"{name:>14}: {_show(figures[name])}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)
    if args.csv:
        _write_jobs(args.csv, result)
    return 0


def _show(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _write_jobs(path: str, result: object) -> None:
    from rota.scheduler.sim.engine import SimResult

    assert isinstance(result, SimResult)
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            ["id", "account", "user", "gpus", "submit", "start", "end", "run_time", "timed_out"]
        )
        for r in result.records:
            j = r.job
            writer.writerow(
                [
                    j.id,
                    j.account,
                    j.user,
                    j.gpus,
                    j.submit_time,
                    r.start,
                    r.end,
                    r.run_time,
                    int(r.timed_out),
                ]
            )
