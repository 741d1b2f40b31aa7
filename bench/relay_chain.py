"""Benchmark: what loopback relays cost on this machine, without rota around them.

Run from the repository root:  python bench/relay_chain.py [ROUNDS]
busybox ``httpd`` serves a 256 MiB file on 127.0.0.1; chains of 0 to 3 relay processes, each
``rota.bytepipe.relay`` (``splice`` in two threads, as the scheduler, the agent and ``rota
forward`` relay a forward's raw bytes), stand between it and a Python client that downloads the
file, in turns (ROUNDS downloads through each chain). For each chain it prints the median
throughput, the median of each round's ratio to that round's direct download, and the
machine's CPU time per GiB moved (all processes and the kernel, from /proc/stat). A forward's
raw path crosses three relays; with this figure beside ``bench/interactive.py``'s it tells
what rota's own relays add to the bare cost of three loopback hops.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rota.bytepipe import relay
from tests.cluster import free_port, wait_for

SIZE = 256 * 2**20
CHAINS = (0, 1, 2, 3)  # relays between the client and httpd


def serve_relay(listen: int, target: int) -> int:
    """A child process relaying each connection to 127.0.0.1:``listen`` to ``target``."""
    pid = os.fork()
    if pid:
        return pid
    server = socket.create_server(("127.0.0.1", listen))
    while True:
        conn, _ = server.accept()
        upstream = socket.create_connection(("127.0.0.1", target))
        threading.Thread(target=relay, args=(conn, upstream), daemon=True).start()


def busy_ticks() -> int:
    """The machine's non-idle CPU time so far, in clock ticks."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4]  # idle and iowait


def download(port: int) -> tuple[float, float]:
    """GiB/s of one download through ``port``, and the machine's CPU-seconds per GiB."""
    ticks, start, got = busy_ticks(), time.perf_counter(), 0
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/big", timeout=120) as reply:
        while chunk := reply.read(1 << 20):
            got += len(chunk)
    seconds = time.perf_counter() - start
    if got != SIZE:
        raise RuntimeError(f"port {port}: {got} bytes of {SIZE}")
    cpu = (busy_ticks() - ticks) / os.sysconf("SC_CLK_TCK")
    return SIZE / seconds / 2**30, cpu / (SIZE / 2**30)


def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        www = Path(tmp)
        (www / "big").write_bytes(b"\0" * SIZE)
        port = free_port()
        busybox = shutil.which("busybox") or "busybox"
        httpd = subprocess.Popen([busybox, "httpd", "-f", "-p", f"127.0.0.1:{port}", "-h", tmp])
        children: list[int] = []
        try:
            ports = {0: port}
            for relays in CHAINS[1:]:
                ports[relays] = free_port()
                children.append(serve_relay(ports[relays], ports[relays - 1]))
            for chain_port in ports.values():
                wait_for(lambda p=chain_port: _listens(p), 10, what=f"port {chain_port}")
            runs: dict[int, list[tuple[float, float]]] = {n: [] for n in CHAINS}
            for _ in range(rounds):
                for relays, chain_port in ports.items():
                    runs[relays].append(download(chain_port))
        finally:
            for pid in children:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            httpd.terminate()
    direct = [speed for speed, _ in runs[0]]
    print(f"{os.cpu_count()} CPUs; {SIZE >> 20} MiB downloads, medians of {rounds}")
    for relays, results in runs.items():
        speeds = [speed for speed, _ in results]
        ratios = [100 * s / d for s, d in zip(speeds, direct, strict=True)]
        print(
            f"{relays} relay(s): {statistics.median(speeds):.2f} GiB/s, "
            f"{statistics.median(ratios):.0f} % of direct ({min(ratios):.0f}-{max(ratios):.0f} %), "
            f"{statistics.median(cpu for _, cpu in results):.2f} CPU-s per GiB"
        )


def _listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
