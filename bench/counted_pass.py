"""Time one scheduling pass with pending jobs whose constraint counts only late nodes meet.

    python bench/counted_pass.py [--nodes 1000 4000] [--jobs 10 200] [--policy rota]

Every node is busy: the a100 half frees up within the hour, the v100 half after 100 hours;
each pending job is ``-N 2 -C "[a100*1&v100*1]"``, so its earliest start is the first v100's.
Prints the wall time of one pass with cold caches and the first jobs' estimated starts.
"""

from __future__ import annotations

import argparse
import time

from rota.constraint import parse_constraint
from rota.scheduler.policy import make_policy
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.snapshot import (
    Allocation,
    GpuView,
    NodeView,
    PendingJob,
    RunningJob,
    Snapshot,
)

HOUR = 3600.0


def build(nodes: int, jobs: int) -> Snapshot:
    views = tuple(
        NodeView(
            f"n{i}",
            tuple(GpuView(g, "A100") for g in range(8)),
            labels={"features": "a100" if i % 2 else "v100"},
        )
        for i in range(nodes)
    )
    running = tuple(
        RunningJob(
            10_000 + i,
            "alice",
            "lab",
            (Allocation(f"n{i}", tuple(range(8))),),
            0.0,
            HOUR * (i / nodes + 1) if i % 2 else HOUR * (100 + i),
        )
        for i in range(nodes)
    )
    counted = parse_constraint("[a100*1&v100*1]")
    pending = tuple(
        PendingJob(j + 1, "bob", "lab", float(j), HOUR, gpus=8, nodes=2, constraint=counted)
        for j in range(jobs)
    )
    return Snapshot(1.0, views, pending, running, config=PolicyConfig())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--jobs", type=int, nargs="+", default=[10, 200])
    parser.add_argument("--policy", default="rota")
    args = parser.parse_args()
    for nodes in args.nodes:
        for jobs in args.jobs:
            snapshot = build(nodes, jobs)
            policy = make_policy(args.policy, snapshot.config)
            wall = time.perf_counter()
            plan = policy.decide(snapshot)
            wall = time.perf_counter() - wall
            first = [round(plan.est_start[j.id]) for j in snapshot.pending[:2]]
            print(f"{nodes} nodes, {jobs} counted jobs: {wall:.2f} s (starts {first})")


if __name__ == "__main__":
    main()
