"""``rota simulate TRACE.csv --nodes N --gpus-per-node G [--policy NAME] [--config FILE]
[--reservations FILE] ...``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

from rota.scheduler.config import load_config, policy_config
from rota.scheduler.policy import DEFAULT_POLICY, POLICIES, make_policy
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.sim import report
from rota.scheduler.sim.bookings import read_bookings
from rota.scheduler.sim.engine import simulate
from rota.scheduler.sim.metrics import summarise
from rota.scheduler.sim.trace import (
    LIMITS,
    TraceError,
    mark_checkpointable,
    read_trace,
    with_limits,
)

RESTART_COST = 60.0  # seconds: restoring a checkpoint and warming up again


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rota simulate", description="Replay a job trace through a scheduling policy."
    )
    p.add_argument("trace", help="Philly or generic CSV (see docs/simulator.md)")
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--gpus-per-node", type=int, required=True)
    p.add_argument(
        "--policy",
        choices=sorted(POLICIES),
        help=f"default: the --config file's policy, else {DEFAULT_POLICY}",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="scheduler YAML (as for `rota scheduler --config`): policy and its settings",
    )
    p.add_argument(
        "--reservations",
        metavar="FILE",
        help="CSV of bookings the policy honours (docs/simulator.md, 'Reservations')",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the derived time limits")
    p.add_argument(
        "--limits",
        choices=LIMITS,
        default="file",
        help="time limits: the trace's (derived where missing; default), none, or noisy",
    )
    p.add_argument(
        "--checkpointable",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of jobs that survive a restart, 0 to 1 (default 0)",
    )
    p.add_argument(
        "--restart-cost",
        type=float,
        default=RESTART_COST,
        metavar="SECONDS",
        help=f"time a checkpointable job loses at each restart (default {RESTART_COST:g})",
    )
    p.add_argument("--json", metavar="OUT", help="write the summary figures as JSON")
    p.add_argument(
        "--csv", metavar="OUT", help="append the summary figures as one CSV row (header if new)"
    )
    p.add_argument("--jobs-csv", metavar="OUT", help="write one row per job as CSV")
    p.add_argument("--limit-jobs", type=int, metavar="N", help="first N jobs only")
    return p


def main(argv: list[str]) -> int:
    """Run one simulation, print its figures and write the outputs asked for.

    Exit code 0, 1 (unreadable trace or reservations file) or 2 (usage, bad config file, --csv file of another kind).
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.nodes < 1 or args.gpus_per_node < 1:
        print("rota simulate: --nodes and --gpus-per-node must be >= 1", file=sys.stderr)
        return 2
    if not 0.0 <= args.checkpointable <= 1.0 or args.restart_cost < 0:
        print(
            "rota simulate: --checkpointable must be in [0, 1] and --restart-cost >= 0",
            file=sys.stderr,
        )
        return 2
    try:
        policy, config = settings(args.config, args.policy)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        print(f"rota simulate: --config {args.config}: {exc}", file=sys.stderr)
        return 2
    if args.csv:
        try:
            report.check_summary_csv(args.csv)
        except (OSError, ValueError) as exc:
            print(f"rota simulate: --csv: {exc}", file=sys.stderr)
            return 2
    try:
        jobs = mark_checkpointable(
            with_limits(read_trace(args.trace, args.limit_jobs), args.limits, args.seed),
            args.checkpointable,
            args.seed,
        )
        booked = (
            read_bookings(args.reservations, args.nodes, args.gpus_per_node)
            if args.reservations
            else []
        )
    except (OSError, TraceError) as exc:
        print(f"rota simulate: {exc}", file=sys.stderr)
        return 1
    began = time.perf_counter()
    result = simulate(
        jobs,
        make_policy(policy, config),
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        reservations=booked,
        restart_cost=args.restart_cost,
    )
    figures: dict[str, object] = {
        "trace": args.trace,
        "policy": policy,
        "config": args.config,
        "reservations": args.reservations,
        "nodes": args.nodes,
        "gpus_per_node": args.gpus_per_node,
        "seed": args.seed,
        "limits": args.limits,
        "checkpointable": args.checkpointable,
        "restart_cost": args.restart_cost,
        "default_time_limit": config.default_time_limit,
    }
    figures |= summarise(result)
    figures["wall_seconds"] = round(time.perf_counter() - began, 2)
    report.print_figures(figures)
    if args.json:
        report.write_json(args.json, figures)
    if args.csv:
        report.append_summary_csv(args.csv, figures)
    if args.jobs_csv:
        report.write_jobs_csv(args.jobs_csv, result)
    return 0


def settings(path: str | None, policy: str | None) -> tuple[str, PolicyConfig]:
    """The policy name and its settings.

    Without ``path``: ``policy`` (default ``rota``) with ``PolicyConfig`` defaults (7-day default
    time limit, as in the published figures). With ``path``: the daemon's settings from that
    YAML, read by the daemon's loader (its ``policy:`` unless ``policy`` is given; unset keys
    take the daemon's defaults, so a 24-hour default time limit). ValueError, OSError or
    yaml.YAMLError name a bad file or setting.
    """
    if path is None:
        return policy or DEFAULT_POLICY, PolicyConfig()
    scheduler = load_config(Path(path), policy=policy)
    return scheduler.policy, policy_config(scheduler)
