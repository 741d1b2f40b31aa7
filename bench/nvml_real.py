"""The agent's NVML code on a real GPU: inventory, one heartbeat's cost, and who uses the GPU.

Runs ``NvmlBackend`` (the agent's real pynvml code) against the machine's own driver, so it
needs a node with an NVIDIA GPU (the test suite covers the same code against the fake library).
It prints the inventory the agent would send at hello, then times ``sample()`` while the GPUs
are idle, then starts a load process (PyTorch matrix products on GPU 0, if PyTorch is there) and
samples again: the utilisation must rise above 0 % and the load's pid must appear among GPU 0's
compute processes, which is what "who uses which GPU" reads. Exit status 1 if either is not so.

    python bench/nvml_real.py [--samples N] [--load-seconds S]

Figures measured on a lent H200 are in docs/gpus.md and docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

LOAD = """
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
print("ready", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
"""


def timed(call: object, count: int) -> tuple[float, float]:
    """Median and p90 of ``count`` calls of ``call``, in milliseconds."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, statistics.quantiles(times, n=10)[-1] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--load-seconds", type=float, default=20.0)
    args = parser.parse_args()

    from rota.agent.gpu.nvml import NvmlBackend

    backend = NvmlBackend()
    try:
        inv = backend.inventory()
        print(f"driver {inv.driver_version} cuda {inv.cuda_version} mode-note {inv.note!r}")
        for gpu in inv.gpus:
            print(
                f"gpu {gpu.index}: {gpu.name} uuid={gpu.uuid} memory={gpu.memory_total} "
                f"bus={gpu.pci_bus_id} cc={gpu.compute_capability}"
            )
        for link in inv.links:
            print(f"link {link}")
        for _ in range(20):
            backend.sample()
        median, p90 = timed(backend.sample, args.samples)
        print(
            f"idle: sample() with {len(inv.gpus)} GPU(s): median {median:.3f} ms, p90 {p90:.3f} ms"
        )
        print(f"idle sample: {backend.sample()}")

        load = subprocess.Popen(
            [sys.executable, "-c", LOAD, str(args.load_seconds)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert load.stdout is not None
        if load.stdout.readline().strip() != "ready":
            print("the load process did not start (is PyTorch with CUDA installed?)")
            return 1
        best_util, seen_pid = 0, False
        deadline = time.monotonic() + args.load_seconds - 2
        while time.monotonic() < deadline and not (best_util > 0 and seen_pid):
            time.sleep(0.5)
            first = backend.sample()[0]
            best_util = max(best_util, first.utilization or 0)
            seen_pid = seen_pid or any(p.pid == load.pid for p in first.processes)
        median, p90 = timed(backend.sample, args.samples // 4)
        loaded = backend.sample()[0]
        print(f"busy sample: {loaded}")
        print(f"busy: sample() median {median:.3f} ms, p90 {p90:.3f} ms")
        print(
            f"load pid {load.pid}: seen among GPU 0's processes: {seen_pid}; max util {best_util}%"
        )
        load.kill()
        load.wait()
        return 0 if best_util > 0 and seen_pid else 1
    finally:
        backend.close()


if __name__ == "__main__":
    sys.exit(main())
