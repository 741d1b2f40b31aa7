"""Benchmark: one /metrics scrape with many nodes (issue 14).

Run from the repository root:  python bench/metrics_scrape.py [NODES] [RUNS]   (defaults 1000, 5)

Builds the scheduler's services in-process and admits NODES 8-GPU nodes with telemetry, as
bench/node_listing.py does, then times RUNS scrapes: the core-thread part
(``Engine.metrics_sample``) and rendering the exposition text (``SchedulerMetrics.render``,
which the daemon runs off the event loop). Prints medians and maxima, the size of the text and
its lines.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.node_listing import admit
from rota.scheduler.config import SchedulerConfig, policy_config
from rota.scheduler.core.services import build_services
from rota.scheduler.engine import Engine
from rota.scheduler.metrics import SchedulerMetrics
from rota.scheduler.policy import make_policy
from rota.scheduler.store.store import Store


async def scrape(engine: Engine, metrics: SchedulerMetrics, runs: int) -> None:
    sampled, rendered = [], []
    text = b""
    for _ in range(runs):
        began = time.perf_counter()
        cluster = await engine.metrics_sample()
        took = time.perf_counter()
        text = metrics.render(cluster)
        sampled.append(took - began)
        rendered.append(time.perf_counter() - took)
    for name, times in (("core thread (sample)", sampled), ("render (off the loop)", rendered)):
        print(
            f"{name:24s} median {1000 * statistics.median(times):7.1f} ms, "
            f"max {1000 * max(times):7.1f} ms"
        )
    lines = text.count(b"\n")
    print(f"{'text':24s} {len(text) / 2**20:.2f} MiB, {lines} lines")


def main() -> None:
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory(prefix="rota-bench-") as tmp:
        config = SchedulerConfig(open_registration=True)
        store = Store(f"sqlite:///{tmp}/scheduler.db")
        policy = make_policy(config.policy, policy_config(config))
        engine = Engine(build_services(store, config, time.time, policy))
        admit(engine, nodes)
        print(f"{nodes} nodes x 8 GPUs, {runs} scrapes")
        asyncio.run(scrape(engine, SchedulerMetrics(), runs))
        asyncio.run(engine.stop())
        store.close()


if __name__ == "__main__":
    main()
