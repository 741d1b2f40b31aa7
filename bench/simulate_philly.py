"""Replay the shared Philly trace through fifo, fifo-backfill, rota and sjf-oracle.

    python bench/simulate_philly.py [--trace ../shared/traces/philly.csv] [--clusters 100 60]
        [--policies fifo fifo-backfill rota sjf-oracle] [--seed 0] [--limit-jobs N] [--jobs 2]
        [--bf-max-job-test 0] [--limits file] [--checkpointable 0] [--restart-cost 60]

Runs every (policy, cluster, limits) with 8 GPUs per node, in parallel processes (``--jobs``),
and prints a markdown table with each run's CPU time (robust on a shared machine) and wall
time. ``--limits`` takes several of ``file none noisy`` (docs/simulator.md); the policy name
``rota-plain`` is rota without attained-service queues (the policy before them), to measure
the gap. Needs the shared trace (tests never do).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from rota.scheduler.policy import make_policy
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.sim.engine import simulate
from rota.scheduler.sim.metrics import summarise
from rota.scheduler.sim.trace import LIMITS, mark_checkpointable, read_trace, with_limits

DEFAULT_TRACE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "philly.csv"


def one(
    trace: str,
    policy: str,
    nodes: int,
    limits: str,
    args: argparse.Namespace,
) -> dict[str, float]:
    jobs = with_limits(read_trace(trace, args.limit_jobs), limits, args.seed)
    jobs = mark_checkpointable(jobs, args.checkpointable, args.seed)
    config = PolicyConfig(backfill_max_job_test=args.bf_max_job_test)
    if policy == "rota-plain":
        policy, config = "rota", replace(config, attained_thresholds=())
    began, cpu = time.perf_counter(), time.process_time()
    result = simulate(
        jobs,
        make_policy(policy, config),
        nodes=nodes,
        gpus_per_node=8,
        restart_cost=args.restart_cost,
    )
    figures = summarise(result)
    figures["wall"] = time.perf_counter() - began
    figures["cpu"] = time.process_time() - cpu
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--clusters", type=int, nargs="+", default=[100, 60])
    parser.add_argument(
        "--policies", nargs="+", default=["fifo", "fifo-backfill", "rota", "sjf-oracle"]
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit-jobs", type=int)
    parser.add_argument("--jobs", type=int, default=2, help="parallel processes")
    parser.add_argument(
        "--bf-max-job-test",
        type=int,
        default=0,
        help="cap on jobs tested per pass (SLURM's bf_max_job_test; 0: none)",
    )
    parser.add_argument("--limits", nargs="+", default=["file"], choices=LIMITS)
    parser.add_argument("--checkpointable", type=float, default=0.0, help="share, 0 to 1")
    parser.add_argument("--restart-cost", type=float, default=60.0, help="seconds")
    args = parser.parse_args()
    runs = [(p, n, lim) for n in args.clusters for lim in args.limits for p in args.policies]
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = {r: pool.submit(one, args.trace, *r, args) for r in runs}
        results = {r: f.result() for r, f in futures.items()}
    print(
        "| cluster | limits | policy | avg JCT (h) | / oracle | p99 JCT (h) | avg queue (h) "
        "| p95 queue (h) | util | Jain (accounts) | timeouts | preemptions / job | CPU (s) |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for policy, nodes, limits in runs:
        f = results[(policy, nodes, limits)]
        oracle = results.get(("sjf-oracle", nodes, limits))
        ratio = f"{f['avg_jct'] / oracle['avg_jct']:.2f}" if oracle else "-"
        print(
            f"| {nodes}x8 | {limits} | {policy} | {f['avg_jct'] / 3600:.2f} | {ratio} "
            f"| {f['p99_jct'] / 3600:.1f} | {f['avg_queue'] / 3600:.2f} "
            f"| {f['p95_queue'] / 3600:.2f} | {f['utilisation']:.3f} | {f['jain_accounts']:.3f} "
            f"| {f['timeouts']:.0f} | {f['preemptions'] / f['jobs']:.3f} | {f['cpu']:.0f} |"
        )


if __name__ == "__main__":
    main()
