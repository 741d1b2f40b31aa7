"""Benchmark: the whole process of `gsub` (a batch script) and `gqueue`, and a sweep submitted
from a shell loop, over the scheduler's HTTP API (the default) and over gRPC (`ROTA_HTTP=off`),
measured in the same run against the same scheduler.

Run from the repository root:
    python bench/cli_startup.py [--runs N] [--loop N] [--before DIR [--before-http]]
It starts a real scheduler (SQLite) on 127.0.0.1 with its HTTP port, registers one node (no
agent: the jobs stay pending, so no container runs) and then, N times (default 30) in
alternation: `gsub job.sh`, `gqueue` (each way); medians are reported. Then `--loop` (default
200) `gsub` in one `bash` loop (`for i in $(seq 200); do gsub job.sh $i >/dev/null; done`),
each way. `--before DIR`: a directory holding another build of the `rota` package (an earlier
commit, `pip install --no-deps --target DIR`), measured as a third way (`PYTHONPATH=DIR`, over
gRPC, or over the HTTP API with `--before-http`), through console scripts written as pip writes
them for that build's entry points (`rota.cli.gsub:main`).
The commands are the installed console scripts beside this Python (`gsub`, `gqueue`), run with
their bytecode cached (in a temporary `PYTHONPYCACHEPREFIX`, written by the dropped first round)
as an installed package has it, whatever `PYTHONDONTWRITEBYTECODE` says.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cluster import Cluster, free_port

SCRIPT = """#!/bin/sh
#SBATCH --job-name=sweep
#SBATCH --time=10:00
#ROTA image=busybox
echo "task $1"
"""


def main(runs: int, loop: int, before: str, before_http: bool) -> None:
    bindir = Path(sys.executable).parent
    commands = {"gsub": str(bindir / "gsub"), "gqueue": str(bindir / "gqueue")}
    ways: dict[str, dict[str, str]] = {"http": {}, "grpc": {"ROTA_HTTP": "off"}}
    if before:
        ways["before"] = {"PYTHONPATH": str(Path(before).resolve())}
        if not before_http:
            ways["before"]["ROTA_HTTP"] = "off"
    with tempfile.TemporaryDirectory() as tmp:
        scripts = {way: commands for way in ways}
        if before:
            scripts["before"] = {name: _script(Path(tmp), name) for name in commands}
        cluster = Cluster(Path(tmp))
        http = free_port()
        cluster.env_extra.update(ROTA_HTTP=f"127.0.0.1:{http}", PYTHONPYCACHEPREFIX=f"{tmp}/pyc")
        try:
            cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}")
            cluster.cli("gadmin", "node", "add", "bench-node", check=True)
            job = cluster.write_job("job.sh", SCRIPT)
            times: dict[str, list[float]] = {}
            for _ in range(runs + 1):  # the first round warms caches and is dropped
                for way, extra in ways.items():
                    env = _cached({**cluster.env, **extra})
                    gsub, gqueue = scripts[way]["gsub"], scripts[way]["gqueue"]
                    for name, cmd in (("gsub", [gsub, str(job)]), ("gqueue", [gqueue])):
                        times.setdefault(f"{name} ({way})", []).append(_run(cmd, env))
            rates = {}
            for way, extra in ways.items():
                env = _cached({**cluster.env, **extra})
                gsub = scripts[way]["gsub"]
                shell = f'for i in $(seq {loop}); do "{gsub}" "{job}" "$i" >/dev/null; done'
                start = time.perf_counter()
                subprocess.run(["bash", "-c", shell], env=env, check=True)
                rates[way] = loop / (time.perf_counter() - start)
            listed = cluster.cli("gqueue", "-t", "all", "-h", "-o", "%i", check=True).stdout
        finally:
            for key in list(cluster.procs):
                cluster.kill(key)
    expected = (runs + 1 + loop) * len(ways)
    assert len(listed.split()) == expected, f"{len(listed.split())} jobs, expected {expected}"
    print(
        f"{runs} runs each way: median (min-max); {os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    for name, values in times.items():
        kept = values[1:]
        print(
            f"{name:16} {statistics.median(kept) * 1000:6.1f} ms "
            f"({min(kept) * 1000:.0f}-{max(kept) * 1000:.0f})"
        )
    for way, rate in rates.items():
        print(f"{loop} gsub in a shell loop ({way}): {rate:.1f} jobs/s")
    for name in ("gsub", "gqueue"):
        fast = statistics.median(times[f"{name} (http)"][1:])
        for way in ways:
            if way != "http":
                ratio = statistics.median(times[f"{name} ({way})"][1:]) / fast
                print(f"{name}: {way} / http = {ratio:.2f}")


def _script(folder: Path, name: str) -> str:
    """A console script for an older build's ``rota.cli.NAME:main``, as pip writes one."""
    path = folder / f"{name}-before"
    path.write_text(
        f"#!{sys.executable}\nimport sys\nfrom rota.cli.{name} import main\n"
        "if __name__ == '__main__':\n    sys.exit(main())\n"
    )
    path.chmod(0o755)
    return str(path)


def _cached(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _run(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="processes of each command, each way")
    parser.add_argument("--loop", type=int, default=200, help="gsub runs in the shell loop")
    parser.add_argument("--before", default="", help="a directory with another rota build")
    parser.add_argument(
        "--before-http", action="store_true", help="run that build over the HTTP API too"
    )
    args = parser.parse_args()
    main(args.runs, args.loop, args.before, args.before_http)
