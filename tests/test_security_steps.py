"""Attacks on srun's step spool by the job's own user (real scheduler, agent and Docker): what
a job does in its spool stalls at most its own sruns, never the agent's handling of its end
or of other jobs' steps."""

from __future__ import annotations

import pytest

from tests.cluster import TEST_IMAGE, Cluster

# The first "start" makes the agent wait for a reader of a FIFO nobody opens, meanwhile the
# control FIFO is filled to the brim; then the batch script ends with the FIFO still full.
CLOGGED = f"""#!/bin/sh
#SBATCH --time=2:00
#ROTA image={TEST_IMAGE}
s=/.rota/spool
mkdir "$s/steps/s.stall" && mkfifo "$s/steps/s.stall/out"
{{
  i=0
  while [ $i -lt 20 ]; do echo "start s.stall"; i=$((i + 1)); done
  yes "cancel s.none"
}} >"$s/ctl" &
sleep 2
echo clogged
"""

FRIENDLY = f"""#!/bin/sh
#SBATCH --time=2:00
#ROTA image={TEST_IMAGE}
srun echo step-ran
"""


@pytest.mark.docker
def test_a_clogged_control_fifo_stalls_neither_the_jobs_end_nor_other_jobs(
    cluster: Cluster,
) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    hostile = cluster.cli(
        "gsub", "--parsable", str(cluster.write_job("clog.sh", CLOGGED)), check=True
    ).stdout.strip()
    assert cluster.wait_state(hostile, "COMPLETED", "FAILED", timeout=60)["state"] == "COMPLETED"
    friendly = cluster.cli(
        "gsub", "--parsable", str(cluster.write_job("ok.sh", FRIENDLY)), check=True
    ).stdout.strip()
    assert cluster.wait_state(friendly, "COMPLETED", "FAILED", timeout=60)["state"] == "COMPLETED"
    assert cluster.cli("glogs", friendly, check=True).stdout == "step-ran\n"
