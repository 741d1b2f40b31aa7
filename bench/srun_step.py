"""Benchmark: srun step start on an idle two-node allocation (median of N steps).

Run from the repository root with a Docker engine up:  python bench/srun_step.py [N]
It starts a real scheduler (SQLite) and two agents (1 simulated GPU each, env GPU mode) on
127.0.0.1 and submits one two-node batch script that runs ``srun -N 2`` N + 1 times (the first
warms caches and is dropped). Each task prints /proc/uptime (CLOCK_BOOTTIME, 10 ms resolution,
one clock for both nodes on one host), which the script also reads just before and after each
srun: "start" is until the last task of the step runs, "step" until srun has returned with
both tasks' output and exit codes.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cluster import Cluster, build_test_image


def main(runs: int) -> None:
    image = build_test_image()
    script = f"""#!/bin/sh
#SBATCH --nodes=2 --ntasks-per-node=1 --gpus-per-node=1 --time=10:00
#ROTA image={image}
i=0
while [ $i -le {runs} ]; do
    read t0 _ </proc/uptime
    out=$(srun -N 2 sh -c 'read t _ </proc/uptime; echo $t')
    read t1 _ </proc/uptime
    echo round $t0 $t1 $out
    i=$((i + 1))
done
"""
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(Path(tmp))
        try:
            cluster.start_scheduler()
            cluster.start_agent("a", gpus=1)
            cluster.start_agent("b", gpus=1)
            path = cluster.write_job("steps.sh", script)
            out = cluster.cli("gsub", "--wait", "--parsable", str(path), check=True)
            job_id = out.stdout.strip()
            logs = cluster.cli("glogs", job_id, check=True).stdout
        finally:
            cluster.stop()
    rounds = [[float(x) for x in line.split()[1:]] for line in logs.splitlines()]
    rounds = [r for r in rounds if len(r) == 4][1:]
    if len(rounds) != runs:
        raise SystemExit(f"expected {runs} steps, got {len(rounds)}:\n{logs}")
    start = [max(r[2:]) - r[0] for r in rounds]
    whole = [r[1] - r[0] for r in rounds]
    print(f"srun -N 2 on an idle two-node allocation, {runs} steps (10 ms clock):")
    for what, values in (
        ("step start (srun -> last task running)", start),
        ("whole step (srun -> srun returned)", whole),
    ):
        print(
            f"  {what}: median {statistics.median(values):.3f} s, "
            f"min {min(values):.3f} s, max {max(values):.3f} s"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
