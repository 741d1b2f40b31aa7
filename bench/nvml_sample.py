"""Median time of ``NvmlBackend.sample()`` with 8 GPUs (one heartbeat's telemetry).

Runs the real pynvml code in-process against the fake ``libnvidia-ml.so.1`` from
``tests/fakenvml`` (built with gcc into a temporary directory); each GPU has two compute
processes, so the process list takes NVML's two-call path.

    python bench/nvml_sample.py [--samples N]

Measured (fake NVML, 8 GPUs, 1000 samples, Python 3.11, nvidia-ml-py 13.615, 2-core VM):
median 0.2 to 0.3 ms per ``sample()`` (three runs: 0.31, 0.20, 0.30 ms). A real driver's own
per-call cost comes on top and was not measured here (no GPU on this machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
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
        procs = [{"pid": 1000 + k, "used_memory": GiB} for k in range(2)]
        gpus = [
            fake_gpu(i, utilization=50, memory_used=2 * GiB, processes=procs)
            for i in range(args.gpus)
        ]
        config = write_fake_config(Path(tmp) / "fake-nvml.json", gpus)
        os.environ["FAKE_NVML_CONFIG"] = str(config)
        preload_fake_nvml(lib_dir)

        from rota.agent.gpu.nvml import NvmlBackend

        backend = NvmlBackend()
        try:
            for _ in range(20):  # warm pynvml's function-pointer cache
                backend.sample()
            times = []
            for _ in range(samples):
                start = time.perf_counter()
                result = backend.sample()
                times.append(time.perf_counter() - start)
            assert len(result) == args.gpus and not any(s.error for s in result)
        finally:
            backend.close()

    median_ms = statistics.median(times) * 1000
    p90_ms = statistics.quantiles(times, n=10)[-1] * 1000
    print(
        f"NvmlBackend.sample() with {args.gpus} GPUs: median {median_ms:.3f} ms, "
        f"p90 {p90_ms:.3f} ms over {samples} samples"
    )


if __name__ == "__main__":
    main()
