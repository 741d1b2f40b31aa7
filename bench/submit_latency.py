"""Benchmark: time from `gsub` to the container's first output line on an idle cluster, and the
whole-process time of `gsub` and `gqueue` (medians of N runs).

Run from the repository root with a Docker engine up:  python bench/submit_latency.py [N]
It starts a real scheduler (SQLite) and agent (2 simulated GPUs, env GPU mode) on 127.0.0.1.
The job prints /proc/uptime first; its first field is CLOCK_BOOTTIME (10 ms resolution), which
is compared with the same clock read just before `gsub` is spawned.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cluster import Cluster, build_test_image, wait_for


def main(runs: int) -> None:
    image = build_test_image()
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(Path(tmp))
        try:
            cluster.start_scheduler()
            cluster.start_agent("bench", gpus=2)
            job = cluster.write_job(
                "first.yaml", f"image: {image}\ncommand: cat /proc/uptime\nresources: {{gpus: 1}}\n"
            )
            first_output, gsub_times = [], []
            for _ in range(runs + 1):  # the first run warms caches and is dropped
                t0 = time.clock_gettime(time.CLOCK_BOOTTIME)
                start = time.perf_counter()
                out = cluster.cli("gsub", "--parsable", str(job), check=True)
                gsub_times.append(time.perf_counter() - start)
                job_id = out.stdout.strip()
                cluster.wait_state(job_id, "COMPLETED", timeout=60)
                logs = cluster.cli("glogs", job_id, check=True).stdout
                first_output.append(float(logs.split()[0]) - t0)
            first_output, gsub_times = first_output[1:], gsub_times[1:]
            for _ in range(5):
                cluster.cli("gsub", "--parsable", str(job), check=True)
            gqueue_times = []
            for _ in range(runs):
                start = time.perf_counter()
                cluster.cli("gqueue", "-t", "all", check=True)
                gqueue_times.append(time.perf_counter() - start)
            wait_for(lambda: all(j["state"] == "COMPLETED" for j in cluster.jobs()), 60)
        finally:
            cluster.stop()

    def fmt(values: list[float]) -> str:
        return f"median {statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f}, n={len(values)})"

    print(f"gsub -> first output line : {fmt(first_output)}")
    print(f"gsub whole process        : {fmt(gsub_times)}")
    print(f"gqueue whole process      : {fmt(gqueue_times)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
