"""Time one scheduling pass: 1,000 nodes x 8 GPUs, 2,000 running jobs, N pending, backfill on.

    python bench/policy_pass.py [--pending 1000 10000 50000] [--runs 7] [--policy rota ...]

Prints median wall time (and CPU time in parentheses) of: a full pass with cold caches
(reasons and estimates for every job); a pass right after one more submission on the same
snapshot (same ``now``, the previous plan not applied); and the daemon's common case, a pass
one second later, in the steady state where every plan so far was applied (placed jobs
run) and one job was submitted. Policies keep their queue order and cluster state between passes (see
docs/policy.md). The snapshot is synthetic and seeded: Philly-like job sizes, a nearly full
cluster with fragmented free GPUs, time limits from 1 hour to 3 days.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import replace

from rota.scheduler.policy import Policy, make_policy
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


def timed(policy: Policy, snapshot: Snapshot) -> tuple[float, float]:
    """Wall and CPU seconds of one pass."""
    wall, cpu = time.perf_counter(), time.process_time()
    policy.decide(snapshot)
    return time.perf_counter() - wall, time.process_time() - cpu


def settle(policy: Policy, snapshot: Snapshot) -> Snapshot:
    """The steady state a daemon reaches: apply each pass's plan (placed jobs run from
    ``NOW``) until a pass places nothing."""
    for round_ in range(20):
        plan = policy.decide(snapshot)
        if not plan.placements:
            break
        placed = {p.job_id: p for p in plan.placements}
        started = tuple(
            RunningJob(j.id, j.user, j.account, placed[j.id].allocations, NOW, j.time_limit)
            for j in snapshot.pending
            if j.id in placed
        )
        pending = tuple(j for j in snapshot.pending if j.id not in placed)
        snapshot = replace(
            snapshot, pending=pending, running=snapshot.running + started, version=100 + round_
        )
    return snapshot


def median_ms(samples: list[tuple[float, float]]) -> str:
    wall = statistics.median(s[0] for s in samples) * 1000
    cpu = statistics.median(s[1] for s in samples) * 1000
    return f"{wall:.1f} ms ({cpu:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--policy", nargs="+", default=["rota", "fifo-backfill"])
    args = parser.parse_args()
    print(
        "| policy | pending | full pass, cold | + 1 submission | "
        "+ 1 submission, plan applied, 1 s later |"
    )
    print("|---|---:|---:|---:|---:|")
    for n in args.pending:
        snapshot = build(n)
        extra = replace(snapshot.pending[0], id=n + 1, submit_time=NOW)
        for name in args.policy:
            full = []
            for v in range(args.runs):
                policy = make_policy(name)  # empty caches
                full.append(timed(policy, replace(snapshot, version=v)))
            incremental = []
            for v in range(args.runs):
                timed(policy, snapshot)  # warm: the previous pass
                bumped = replace(snapshot, pending=(*snapshot.pending, extra), version=v + 2)
                incremental.append(timed(policy, bumped))
            settled = settle(policy, snapshot)
            later = replace(settled, now=NOW + 1)
            applied = []
            for v in range(args.runs):
                timed(policy, settled)  # warm: the pass after the plan was applied
                bumped = replace(
                    later,
                    pending=(*settled.pending, replace(extra, submit_time=NOW + 1)),
                    version=v + 20,
                )
                applied.append(timed(policy, bumped))
            print(
                f"| {name} | {n:,} | {median_ms(full)} | {median_ms(incremental)} "
                f"| {median_ms(applied)} |"
            )


if __name__ == "__main__":
    main()
