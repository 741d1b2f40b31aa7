"""srun steps through a scheduler ``kill -9`` (steps relay through the scheduler), with real
processes and Docker: the running step fails at once (srun says it lost contact, its tasks
are stopped), the batch script goes on, and the step's end is recorded: FAILED in ``gacct``
and ``gcontrol show job`` once the job runs its next step, and FAILED with the job when it
runs none. Neither the step nor the job hangs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import config_file, restart_scheduler

pytestmark = pytest.mark.docker

SCRIPT = f"""#!/bin/sh
#SBATCH --time=2:00
#ROTA image={TEST_IMAGE}
srun sh -c 'echo started; exec sleep 6173'
echo "rc=$?"
"""


def _steps(cluster: Cluster, job_id: str) -> list[tuple[str, str, int | None]]:
    rows = json.loads(cluster.cli("gacct", "-j", job_id, "--json", check=True).stdout)
    return [(r["id"], r["state"], r["exit_code"]) for r in rows]


def test_a_step_running_when_the_scheduler_is_killed_ends_recorded(cluster: Cluster) -> None:
    args = ("--config", config_file(cluster), "--open-registration")
    cluster.start_scheduler(*args)
    cluster.start_agent("n1", gpus=0)
    with_next = cluster.write_job("next.sh", SCRIPT + "srun echo after\n")
    alone = cluster.write_job("alone.sh", SCRIPT)
    a = cluster.cli("gsub", "--parsable", str(with_next), check=True).stdout.strip()
    b = cluster.cli("gsub", "--parsable", str(alone), check=True).stdout.strip()
    for job_id in (a, b):
        wait_for(lambda j=job_id: "started" in cluster.cli("glogs", j).stdout, 30, what="steps")

    cluster.kill("scheduler")
    restart_scheduler(cluster, *args)

    lost = "srun: error: lost contact with the scheduler"
    for job_id in (a, b):  # the scripts went on at once: not after the steps' 6173 s sleep
        assert cluster.wait_state(job_id, "COMPLETED", "FAILED", timeout=120)["state"] == (
            "COMPLETED"
        )
        lines = cluster.cli("glogs", job_id, check=True).stdout.splitlines()
        # srun's stderr and the script's stdout reach the log through separate pipes: the
        # order between them is not kept
        assert lines.count(lost) == 1, lines
        shown = [line for line in lines if line != lost]
        assert shown == ["started", "rc=1", *(["after"] if job_id == a else [])], lines
    assert _steps(cluster, a) == [
        (a, "COMPLETED", 0),
        (f"{a}.batch", "COMPLETED", 0),
        (f"{a}.0", "FAILED", 1),
        (f"{a}.1", "COMPLETED", 0),
    ]
    assert _steps(cluster, b) == [
        (b, "COMPLETED", 0),
        (f"{b}.batch", "COMPLETED", 0),
        (f"{b}.0", "FAILED", None),
    ]
    show = cluster.cli("gcontrol", "show", "job", a, check=True).stdout
    assert (
        f"step {a}.0 ended FAILED: exit code 1 (srun lost contact with the scheduler, which "
        "restarted)" in show
    )
    assert "sleep 6173 " not in _processes(), "the steps' tasks were stopped"


def _processes() -> str:
    """Every process's command line on this host, one a line (arguments space-separated)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return "\n".join(found)
