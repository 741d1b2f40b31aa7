"""Attacks on srun's step spool by the job's own user (real scheduler, agent and Docker): what
a job does in its spool stalls at most its own sruns, never the agent's handling of its end
or of other jobs' steps."""

from __future__ import annotations

import pytest

from tests.cluster import TEST_IMAGE, Cluster, wait_for

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


# 600 "start" lines for one request whose stderr FIFO the job holds full and never reads (the
# steps are refused: 999 tasks): each line used to become a thread of the agent's, blocked for
# good on writing its refusal there.
FLOOD = f"""#!/bin/sh
#SBATCH --time=2:00
#ROTA image={TEST_IMAGE}
s=/.rota/spool
r="$s/steps/s.flood"
mkdir "$r" && printf true >"$r/a.0" && printf 'ntasks=999\\n' >"$r/opts"
mkfifo "$r/out" "$r/err" "$r/end"
exec 3<>"$r/out" 4<>"$r/err"
head -c 100000 /dev/zero >&4 &
i=0
while [ $i -lt 600 ]; do echo "start s.flood"; i=$((i + 1)); done >"$s/ctl"
echo flooded
sleep 60
"""


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("Threads:")).split()[1])


@pytest.mark.docker
def test_a_flood_of_sruns_that_never_read_costs_the_agent_a_bounded_number_of_threads(
    cluster: Cluster,
) -> None:
    cluster.start_scheduler()
    agent = cluster.start_agent("n1", gpus=1)
    job = cluster.cli(
        "gsub", "--parsable", str(cluster.write_job("flood.sh", FLOOD)), check=True
    ).stdout.strip()
    try:
        wait_for(lambda: "flooded" in cluster.cli("glogs", job).stdout, 60, what="the flood")
        with pytest.raises(AssertionError, match="timed out"):  # 64 sruns' threads at most
            wait_for(lambda: _threads(agent.pid) > 300, 20, what="300 threads in the agent")
    finally:
        cluster.cli("gcancel", job)
