"""A step that floods its output (issue 24, item 3): real scheduler, two real agents, real
Docker. 128 MiB of output from eight tasks on two nodes, relayed through the scheduler,
reaches srun complete; the scheduler's memory stays within a bound far below what passed through
it (each node of a step has a window of output in the scheduler; without windows it grew by
80 MiB here); and meanwhile ``gqueue`` answers and another job's step runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.cluster import TEST_IMAGE, Cluster, wait_for

PER_TASK = 16 << 20  # bytes each of the eight tasks writes
MiB = 1 << 20

# Each task writes its share as fast as it can, then waits for the test's "release" file in
# the submit directory (mounted on both nodes), so the step surely runs while the test looks.
FLOOD = f"""#!/bin/sh
#SBATCH --nodes=2
#SBATCH --time=5:00
#ROTA image={TEST_IMAGE}
task='head -c {PER_TASK} /dev/zero; until [ -e release ]; do sleep 0.1; done'
n=$(srun --ntasks-per-node=4 sh -c "$task" | wc -c)
echo "relayed $n"
"""

OTHER = f"""#!/bin/sh
#SBATCH --time=2:00
#ROTA image={TEST_IMAGE}
srun echo other-step
"""


def _rss(pid: int) -> int:
    """The process's resident memory in bytes (from /proc)."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


@contextmanager
def _peak_rss(pid: int) -> Iterator[list[int]]:
    """The highest resident memory of ``pid`` seen while the block runs (``[peak]``)."""
    peak = [_rss(pid)]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], _rss(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()


@pytest.mark.docker
def test_a_flooding_step_is_relayed_whole_in_bounded_memory_and_stalls_nobody(
    cluster: Cluster,
) -> None:
    scheduler = cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    cluster.start_agent("n2", gpus=1)
    warm = cluster.cli("gsub", "--parsable", str(cluster.write_job("warm.sh", OTHER)), check=True)
    cluster.wait_state(warm.stdout.strip(), "COMPLETED", "FAILED", timeout=60)
    before = _rss(scheduler.pid)

    with _peak_rss(scheduler.pid) as peak:
        script = cluster.write_job("flood.sh", FLOOD)
        job = cluster.cli("gsub", "--parsable", str(script), cwd=cluster.root, check=True)
        job_id = job.stdout.strip()
        # gqueue answers while the step floods (it lists the step, so it ran meanwhile)
        wait_for(
            lambda: f"{job_id}.0" in cluster.cli("gqueue", "-s", "-h", check=True).stdout,
            60,
            what="the flooding step in gqueue -s",
        )
        other = cluster.cli(
            "gsub", "--parsable", str(cluster.write_job("other.sh", OTHER)), check=True
        ).stdout.strip()
        assert cluster.wait_state(other, "COMPLETED", "FAILED", timeout=60)["state"] == "COMPLETED"
        assert cluster.cli("glogs", other, check=True).stdout == "other-step\n"
        assert cluster.job(job_id)["state"] == "RUNNING"  # the flood's step still runs
        (cluster.root / "release").touch()
        state = cluster.wait_state(job_id, "COMPLETED", "FAILED", timeout=180)["state"]

    assert state == "COMPLETED"
    assert cluster.cli("glogs", job_id, check=True).stdout == f"relayed {8 * PER_TASK}\n"
    grown = peak[0] - before
    assert grown < 32 * MiB, f"the scheduler grew {grown / MiB:.0f} MiB relaying 128 MiB"
