"""Time one scheduling pass: 1,000 nodes x 8 GPUs, 2,000 running jobs, N pending, backfill on.

    python bench/policy_pass.py [--pending 1000 10000 50000] [--runs 5] [--policy rota ...]

Prints the median wall time of a full pass (reasons and estimates for every job) and of a
pass right after one more submission (the daemon's common case; rota reuses its cached
priorities). The snapshot is synthetic and seeded: Philly-like job sizes, a nearly full
cluster with fragmented free GPUs, time limits from 1 hour to 3 days.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import replace

from rota.scheduler.policy import get_policy
from rota.scheduler.policy.config import HOUR
from rota.scheduler.policy.snapshot import (
    Allocation,
    GpuView,
    NodeView,
    PendingJob,
    RunningJob,
    Snapshot,
)

NODES, GPUS, RUNNING = 1000, 8, 2000
NOW = 10 * 24 * HOUR


def build(pending: int, seed: int = 1) -> Snapshot:
    rng = random.Random(seed)
    nodes = tuple(
        NodeView(f"n{i:04d}", tuple(GpuView(g, "A100") for g in range(GPUS))) for i in range(NODES)
    )
    running, free = [], {n.name: list(range(GPUS)) for n in nodes}
    names = list(free)
    for i in range(RUNNING):
        want = rng.choice([1, 2, 4, 4, 8])
        for name in rng.sample(names, 20):
            if len(free[name]) >= want:
                gpus, free[name] = tuple(free[name][:want]), free[name][want:]
                running.append(
                    RunningJob(
                        100_000 + i,
                        f"u{i % 50}",
                        f"a{i % 10}",
                        (Allocation(name, gpus),),
                        start_time=NOW - rng.uniform(0, 2 * 24 * HOUR),
                        time_limit=rng.choice([4, 12, 24, 72]) * HOUR,
                    )
                )
                break
    jobs = []
    for i in range(pending):
        gpus = rng.choices([1, 2, 4, 8, 16], weights=[80, 6, 6, 6, 2])[0]
        jobs.append(
            PendingJob(
                i + 1,
                f"u{rng.randrange(50)}",
                f"a{rng.randrange(10)}",
                submit_time=NOW - rng.uniform(0, 3 * 24 * HOUR),
                time_limit=rng.choice([1, 2, 4, 8, 24, 72]) * HOUR,
                gpus=min(gpus, GPUS),
                nodes=max(1, gpus // GPUS),
                gpu_type="A100" if rng.random() < 0.05 else "",
            )
        )
    return Snapshot(NOW, nodes, tuple(jobs), tuple(running), version=1)


def timed(policy: str, snapshot: Snapshot) -> float:
    decide = get_policy(policy)
    began = time.perf_counter()
    decide(snapshot)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--policy", nargs="+", default=["rota", "fifo-backfill"])
    args = parser.parse_args()
    print("| policy | pending | full pass (median) | after one submission (median) |")
    print("|---|---:|---:|---:|")
    for n in args.pending:
        snapshot = build(n)
        extra = replace(snapshot.pending[0], id=n + 1, submit_time=NOW)
        for policy in args.policy:
            full = [timed(policy, replace(snapshot, version=v)) for v in range(args.runs)]
            incremental = []
            for v in range(args.runs):
                timed(policy, snapshot)  # warm: the previous pass
                bumped = replace(snapshot, pending=(*snapshot.pending, extra), version=v + 2)
                incremental.append(timed(policy, bumped))
            print(
                f"| {policy} | {n:,} | {statistics.median(full) * 1000:.0f} ms "
                f"| {statistics.median(incremental) * 1000:.0f} ms |"
            )


if __name__ == "__main__":
    main()
