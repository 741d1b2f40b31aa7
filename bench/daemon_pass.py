"""Benchmark: one scheduling pass as the daemon runs it (snapshot -> decide -> apply),
with the real store (SQLite), on 1,000 nodes x 8 GPUs, 2,000 running jobs and N pending.

Run: python bench/daemon_pass.py [N ...]   (default 1000 10000 50000)
Prints the median wall and CPU time of a full pass (caches cold) and of a pass after one new
submission (the steady state: the previous pass's plan applied, the clock 1 s later, and a
heartbeat with fresh telemetry from every node in between, which is not timed).
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rota.gpus import GpuInfo
from rota.jobspec import JobSpec
from rota.messages import GpuTelemetry, Heartbeat, Hello, Inventory
from rota.scheduler.config import SchedulerConfig, policy_config
from rota.scheduler.core.jobs import SubmitItem
from rota.scheduler.core.services import Services, build_services
from rota.scheduler.engine import Engine
from rota.scheduler.policy import Policy, make_policy
from rota.scheduler.store.store import Store

NODES, GPUS, RUNNING, RUNS = 1000, 8, 2000, 7


class Clock:
    now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def build(pending: int, store: Store, policy: str) -> tuple[Services, Engine, Clock]:
    clock = Clock()
    config = SchedulerConfig(open_registration=True, policy=policy)
    core = build_services(
        store,
        config,
        clock,
        make_policy(policy, policy_config(config)),
    )
    engine = Engine(core)
    gpus = tuple(GpuInfo(i, f"GPU-{i}", "A100", 80 * 2**30) for i in range(GPUS))
    for n in range(NODES):
        engine.steps.hello(
            Hello(f"node{n:04d}", "t", Inventory(gpus=gpus, cpus=64, memory=2**40)), n + 1
        )
    rng = random.Random(0)

    def submit(count: int, gpus: int | None = None) -> None:
        for start in range(0, count, 1000):
            items = [
                SubmitItem(
                    JobSpec(
                        image="i",
                        command=("true",),
                        gpus=gpus or rng.choice([1, 1, 2, 4, 8]),
                        time_limit=rng.choice([3600.0, 4 * 3600.0, 24 * 3600.0]),
                    )
                )
                for _ in range(min(1000, count - start))
            ]
            core.jobs.submit(items, f"user{rng.randrange(50)}")

    submit(RUNNING, gpus=4)  # fills every GPU
    one_pass(core, core.policy)
    submit(pending)
    return core, engine, clock


def busy_heartbeat() -> Heartbeat:
    """A heartbeat whose eight GPUs are all busy (new telemetry objects every time)."""
    return Heartbeat(
        gpus=tuple(
            GpuTelemetry(i, f"GPU-{i}", utilization=90.0, memory_used=40 * 2**30)
            for i in range(GPUS)
        )
    )


def one_pass(core: Services, policy: Policy) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    snap = core.planner.snapshot()
    core.planner.apply(policy.decide(snap))
    return time.perf_counter() - wall, time.process_time() - cpu


def main(sizes: list[int], policy: str = "rota") -> None:
    print(f"policy {policy}: {NODES} nodes x {GPUS} GPUs, {RUNNING} running; median of {RUNS} (ms)")
    print(
        "| pending | full pass wall | full pass CPU | after 1 submission wall | after 1 submission CPU |"
    )
    print("|---:|---:|---:|---:|---:|")
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(f"sqlite:///{Path(tmp) / 'db'}")
            core, engine, clock = build(size, store, policy)
            full, inc = [], []
            for _ in range(RUNS):
                core.snapshots.forget()  # and a new policy instance: empty caches
                full.append(one_pass(core, make_policy(policy, core.policy.config)))
            for _ in range(RUNS):
                clock.now += 1.0
                for node in core.model.nodes.values():  # fresh telemetry from every node
                    engine.steps.heartbeat(node.name, node.session, busy_heartbeat())
                core.jobs.submit(
                    [SubmitItem(JobSpec(image="i", command=("true",), gpus=2))], "newcomer"
                )
                inc.append(one_pass(core, core.policy))
            store.close()

        def med(xs: list[tuple[float, float]], i: int) -> str:
            return f"{statistics.median(x[i] for x in xs) * 1000:.1f}"

        print(f"| {size:,} | {med(full, 0)} | {med(full, 1)} | {med(inc, 0)} | {med(inc, 1)} |")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10000, 50000])
