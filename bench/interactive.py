"""Benchmark: interactive sessions on an idle cluster (issue 25).

Run from the repository root with a Docker engine up:  python bench/interactive.py [N]
It starts a real scheduler (SQLite) and agent (1 simulated GPU) on 127.0.0.1, then measures:

- ``grun --pty sh`` to a usable prompt: from spawning grun on a pseudo-terminal to the shell's
  prompt appearing on it (submission, the pass, the container's start, the attach), N times;
- keystroke echo: a key written to the terminal until its echo (by the container's terminal,
  through agent, scheduler and grun) is read back, 200 keys into ``cat``;
- a forwarded port's download throughput (``rota forward`` to busybox httpd in a job, 64 MiB)
  against the same file from busybox httpd on the host's loopback (a direct connection), by
  both ways a forward goes: the raw data path through the HTTP port (``Upgrade: rota-tcp``)
  and the gRPC session relay (``ROTA_HTTP=off``, the fallback), in turns in the same run; each
  forwarded download is compared with the direct one of its round (the machine's load moves
  both alike).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cluster import Cluster, build_test_image, free_port, wait_for
from tests.terminal import Terminal

SIZE = 64 * 2**20
ROUNDS = 5  # downloads of each way


def ms(values: list[float]) -> str:
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return (
        f"median {statistics.median(values) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms "
        f"(min {values[0] * 1000:.1f}, max {values[-1] * 1000:.1f}, n={len(values)})"
    )


def to_prompt(cluster: Cluster, image: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs + 1):  # the first run warms caches and is dropped
        start = time.perf_counter()
        term = Terminal(["-m", "rota.cli.grun", "--image", image, "--pty", "sh"], cluster.env)
        try:
            term.expect(b"$ ")
            times.append(time.perf_counter() - start)
            term.send(b"exit\r")
            term.wait()
        finally:
            term.close()
    return times[1:]


def echo_times(cluster: Cluster, image: str, keys: int = 200) -> list[float]:
    term = Terminal(["-m", "rota.cli.grun", "--image", image, "--pty", "sh"], cluster.env)
    times = []
    try:
        term.expect(b"$ ")  # the session is live (keys typed before would echo locally)
        term.send(b"cat\r")
        term.expect(b"cat\r\n")
        for i in range(keys):
            key = bytes([ord("a") + i % 26])
            start = time.perf_counter()
            term.send(key)
            term.expect(key)
            times.append(time.perf_counter() - start)
        term.send(b"\x03")  # Ctrl-C: cat ends
        term.expect(b"$ ")
        term.send(b"exit\r")
        term.wait()
    finally:
        term.close()
    return times


def download(url: str) -> float:
    start = time.perf_counter()
    got = 0
    with urllib.request.urlopen(url, timeout=120) as reply:
        while chunk := reply.read(1 << 20):
            got += len(chunk)
    if got != SIZE:
        raise RuntimeError(f"{url}: {got} bytes of {SIZE}")
    return SIZE / (time.perf_counter() - start) / 2**20


def throughput(cluster: Cluster, image: str, root: Path) -> dict[str, list[float]]:
    """MiB/s of ``ROUNDS`` downloads each, in turns: ``raw``, ``grpc`` (forwarded), ``direct``."""
    www = root / "www"
    www.mkdir(mode=0o755)
    (www / "big").write_bytes(b"\0" * SIZE)
    job = cluster.write_job(
        "web.yaml",
        f"image: {image}\ncommand: [httpd, -f, -p, '8080', -h, /www]\n"
        f"mounts: [{{source: {www}, target: /www, read_only: true}}]\n",
    )
    job_id = cluster.cli("gsub", "--parsable", str(job), check=True).stdout.strip()
    cluster.wait_state(job_id, "RUNNING")
    ports = {"raw": free_port(), "grpc": free_port(), "direct": free_port()}
    forwards = [
        subprocess.Popen(
            [sys.executable, "-m", "rota.cli.rota_main", "forward", job_id, f"{ports[way]}:8080"],
            env={**cluster.env, **({"ROTA_HTTP": "off"} if way == "grpc" else {})},
            stdout=subprocess.PIPE,
        )
        for way in ("raw", "grpc")
    ]
    direct_port = ports["direct"]
    busybox = shutil.which("busybox") or "busybox"
    direct = subprocess.Popen(
        [busybox, "httpd", "-f", "-p", f"127.0.0.1:{direct_port}", "-h", str(www)]
    )
    speeds: dict[str, list[float]] = {way: [] for way in ports}
    try:
        for forward in forwards:
            assert forward.stdout is not None
            forward.stdout.readline()
        wait_for(lambda: _answers(direct_port), 10, what="host httpd")
        for _ in range(ROUNDS):  # in turns: a change of the machine's load touches all three
            for way, port in ports.items():
                speeds[way].append(download(f"http://127.0.0.1:{port}/big"))
    finally:
        for forward in forwards:
            forward.terminate()
        direct.terminate()
    return speeds


def _answers(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).close()
    except OSError as exc:
        return "404" in str(exc)
    return True


def main(runs: int) -> None:
    image = build_test_image()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o755)
        settings = root / "sched.yaml"
        http = f"127.0.0.1:{free_port()}"
        settings.write_text(
            f"scheduler:\n  interactive_max_sessions: 0\n  allowed_mounts: [{root}]\n"
            f"  http_listen: '{http}'\n"
        )
        cluster = Cluster(root, env_extra={"ROTA_HTTP": http})
        try:
            cluster.start_scheduler("--open-registration", "--config", str(settings))
            cluster.start_agent("bench", 1)
            prompt = to_prompt(cluster, image, runs)
            echo = echo_times(cluster, image)
            speed = throughput(cluster, image, root)
        finally:
            cluster.stop()
    print(f"grun --pty to a usable prompt : {ms(prompt)}")
    print(f"keystroke echo round trip     : {ms(echo)}")
    direct = statistics.median(speed["direct"])
    for way, name in (("raw", "raw data path"), ("grpc", "gRPC relay   ")):
        ratios = [100 * f / d for f, d in zip(speed[way], speed["direct"], strict=True)]
        print(
            f"forwarded, {name}      : {statistics.median(speed[way]):.0f} MiB/s, direct "
            f"{direct:.0f} MiB/s (medians of {ROUNDS}); of its round's direct download: "
            f"median {statistics.median(ratios):.0f} % ({min(ratios):.0f}-{max(ratios):.0f} %)"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
