"""Replay the shared Philly trace through fifo, fifo-backfill, rota and sjf-oracle.

    python bench/simulate_philly.py [--trace ../shared/traces/philly.csv] [--clusters 100 60]
        [--policies fifo fifo-backfill rota sjf-oracle] [--seed 0] [--limit-jobs N] [--jobs 2]
        [--bf-max-job-test 0]

Runs every (policy, cluster) with 8 GPUs per node, in parallel processes (``--jobs``), and
prints a markdown table with each run's CPU time (robust on a shared machine) and wall time. Needs the shared trace (tests never do).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rota.scheduler.policy import make_policy
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.sim.engine import simulate
from rota.scheduler.sim.metrics import summarise
from rota.scheduler.sim.trace import derive_limits, read_trace

DEFAULT_TRACE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "philly.csv"


def one(
    trace: str, policy: str, nodes: int, seed: int, limit: int | None, max_job_test: int
) -> dict[str, float]:
    jobs = derive_limits(read_trace(trace, limit), seed)
    config = PolicyConfig(backfill_max_job_test=max_job_test)
    began, cpu = time.perf_counter(), time.process_time()
    result = simulate(jobs, make_policy(policy, config), nodes=nodes, gpus_per_node=8)
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
    args = parser.parse_args()
    runs = [(p, n) for n in args.clusters for p in args.policies]
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = {
            r: pool.submit(
                one, args.trace, r[0], r[1], args.seed, args.limit_jobs, args.bf_max_job_test
            )
            for r in runs
        }
        results = {r: f.result() for r, f in futures.items()}
    print(
        "| cluster | policy | avg JCT (h) | avg queue (h) | p50 queue (h) | p95 queue (h) "
        "| p99 queue (h) | util | Jain (accounts) | timeouts | CPU (s) | wall (s) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for policy, nodes in runs:
        f = results[(policy, nodes)]
        print(
            f"| {nodes}x8 | {policy} | {f['avg_jct'] / 3600:.2f} | {f['avg_queue'] / 3600:.2f} "
            f"| {f['p50_queue'] / 3600:.3f} | {f['p95_queue'] / 3600:.2f} | {f['p99_queue'] / 3600:.2f} "
            f"| {f['utilisation']:.3f} | {f['jain_accounts']:.3f} | {f['timeouts']:.0f} "
            f"| {f['cpu']:.0f} | {f['wall']:.0f} |"
        )


if __name__ == "__main__":
    main()
