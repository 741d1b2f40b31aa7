"""Median time to collect one heartbeat's GPU part with 8 GPUs.

Runs the real pynvml code in-process against the fake ``libnvidia-ml.so.1`` from
``tests/fakenvml`` (built with gcc into a temporary directory); each GPU has two compute
processes, so the process list takes NVML's two-call path. Two figures:

- ``sample()``: ``NvmlBackend.sample()`` alone;
- heartbeat: ``sample()`` + the pid -> job mapping (``ProcessOwners``: one ``/proc/<pid>/cgroup``
  read per GPU process, then the parent chain up to pid 1, since these pids are real ``sleep``
  processes outside any container, the worst case) + the protobuf ``Heartbeat`` message. In a
  steady state the mapping's verdicts are cached; the third figure is the cold mapping (every
  pid new), what a heartbeat pays when jobs start or processes appear.

    python bench/nvml_sample.py [--samples N] [--gpus N]

Measured (fake NVML, 8 GPUs x 2 processes, 1000 samples, Python 3.11, nvidia-ml-py 13.615,
2-core VM): see docs/gpus.md for the figures and the command. A real driver's own per-call cost
comes on top and was not measured here (no GPU on this machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.nvml_fake

from tests.nvml_fake import GiB, build_fake_nvml, fake_gpu, preload_fake_nvml, write_fake_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000, help="timed samples (>= 50)")
    parser.add_argument("--gpus", type=int, default=8)
    args = parser.parse_args()
    samples = max(args.samples, 50)

    with tempfile.TemporaryDirectory() as tmp:
        lib_dir = build_fake_nvml(Path(tmp))
        sleepers = [
            subprocess.Popen(["sleep", "600"]) for _ in range(2 * args.gpus)
        ]  # real pids, so the mapping reads real /proc entries
        gpus = [
            fake_gpu(
                i,
                utilization=50,
                memory_used=2 * GiB,
                processes=[{"pid": p.pid, "used_memory": GiB} for p in sleepers[2 * i : 2 * i + 2]],
            )
            for i in range(args.gpus)
        ]
        config = write_fake_config(Path(tmp) / "fake-nvml.json", gpus)
        os.environ["FAKE_NVML_CONFIG"] = str(config)
        preload_fake_nvml(lib_dir)

        from rota.agent.gpu.nvml import NvmlBackend
        from rota.agent.link.stream import _sample_to_pb
        from rota.agent.runtime.owners import ProcessOwners
        from rota.v1 import rota_pb2 as pb

        # eight job containers whose init pids own none of the processes (all foreign)
        containers = {f"{k:064x}": (10_000_000 + k, str(k)) for k in range(args.gpus)}
        owners = ProcessOwners(containers.get)

        def heartbeat() -> pb.Heartbeat:
            samples = backend.sample()
            pids = (p.pid for s in samples for p in s.processes)
            mapped = owners.owners(pids, containers)
            return pb.Heartbeat(gpus=[_sample_to_pb(s, mapped) for s in samples])

        backend = NvmlBackend()
        try:
            for _ in range(20):  # warm pynvml's function-pointer cache
                heartbeat()
            times, beats = [], []
            for _ in range(samples):
                start = time.perf_counter()
                result = backend.sample()
                times.append(time.perf_counter() - start)
                start = time.perf_counter()
                beat = heartbeat()
                beats.append(time.perf_counter() - start)
            pids = [p.pid for s in result for p in s.processes]
            cold = []
            for _ in range(max(samples // 5, 50)):  # every pid new: /proc is read
                fresh = ProcessOwners(containers.get)
                start = time.perf_counter()
                fresh.owners(pids, containers)
                cold.append(time.perf_counter() - start)
            assert len(result) == args.gpus and not any(s.error for s in result)
            assert len(beat.gpus) == args.gpus and all(len(g.processes) == 2 for g in beat.gpus)
        finally:
            backend.close()
            for proc in sleepers:
                proc.kill()
                proc.wait()

    for what, values in (
        ("NvmlBackend.sample()", times),
        ("heartbeat (sample + pid->job + proto)", beats),
        (f"pid->job mapping of {2 * args.gpus} new pids (cold)", cold),
    ):
        median_ms = statistics.median(values) * 1000
        p90_ms = statistics.quantiles(values, n=10)[-1] * 1000
        print(
            f"{what} with {args.gpus} GPUs: median {median_ms:.3f} ms, "
            f"p90 {p90_ms:.3f} ms over {len(values)} samples"
        )


if __name__ == "__main__":
    main()
