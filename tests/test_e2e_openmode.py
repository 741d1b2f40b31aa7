"""End to end with Docker: SLURM's ``--open-mode`` for the output file of a requeued batch job.
As with SLURM (``JobFileAppend=0``), an attempt empties ``slurm-%j.out`` unless the job or the
scheduler (``job_file_append``) says append; then the file holds every attempt's output."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.cluster import TEST_IMAGE, Cluster, wait_for

pytestmark = pytest.mark.docker

SCRIPT = f"""#!/bin/sh
#SBATCH --requeue
{{directive}}
#ROTA image={TEST_IMAGE}
echo "attempt $SLURM_RESTART_COUNT"
if [ "$SLURM_RESTART_COUNT" = 0 ]; then trap 'exit 0' TERM; sleep 300 & wait; fi
{{then}}"""


def _workdir(cluster: Cluster) -> Path:
    work = cluster.root / "work"
    work.mkdir()
    os.chown(work, 65534, 65534)  # the job's user (root's jobs run as the default 65534)
    return work


def _submit(
    cluster: Cluster, work: Path, name: str, directive: str, *flags: str, then: str = ""
) -> str:
    script = cluster.root / f"{name}.sh"
    script.write_text(SCRIPT.format(directive=directive, then=then))
    done = cluster.cli("gsub", "--parsable", *flags, str(script), cwd=work)
    assert done.stdout.strip().isdigit(), done.stderr
    return done.stdout.strip()


def _requeue_while_running(cluster: Cluster, work: Path, jobs: list[str]) -> None:
    """Each job's first attempt has written its line; requeued, its second attempt ends."""
    for job in jobs:
        out = work / f"slurm-{job}.out"
        wait_for(lambda o=out: o.exists() and o.read_text() == "attempt 0\n", 60, what=str(out))
        cluster.cli("gcontrol", "requeue", job, check=True)
    for job in jobs:
        wait_for(lambda j=job: _second_attempt_done(cluster, j), 90, what=f"job {job} requeued")


def _second_attempt_done(cluster: Cluster, job: str) -> bool:
    seen = cluster.job(job)
    return bool(seen["attempt"] == 2 and seen["state"] == "COMPLETED")


def test_a_requeued_job_appends_only_when_it_says_so(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", 2)
    work = _workdir(cluster)
    appends = _submit(cluster, work, "appends", "#SBATCH --open-mode=append")
    default = _submit(cluster, work, "default", "")
    _requeue_while_running(cluster, work, [appends, default])
    assert (work / f"slurm-{appends}.out").read_text() == "attempt 0\nattempt 1\n"
    assert (work / f"slurm-{default}.out").read_text() == "attempt 1\n"  # JobFileAppend=0
    assert cluster.cli("glogs", "--attempt", "1", default, check=True).stdout == "attempt 0\n"


def test_the_schedulers_job_file_append_and_gsub_open_mode(cluster: Cluster) -> None:
    config = cluster.write_job("sched.yaml", "job_file_append: true\n")
    cluster.start_scheduler("--open-registration", "--config", str(config))
    cluster.start_agent("n1", 2)
    work = _workdir(cluster)
    default = _submit(cluster, work, "default", "")
    truncates = _submit(cluster, work, "truncates", "", "--open-mode", "truncate")
    _requeue_while_running(cluster, work, [default, truncates])
    assert (work / f"slurm-{default}.out").read_text() == "attempt 0\nattempt 1\n"
    assert (work / f"slurm-{truncates}.out").read_text() == "attempt 1\n"


def test_an_agent_restarted_mid_attempt_still_appends(cluster: Cluster) -> None:
    """The adopting agent writes the attempt's output after the earlier attempt's, not over it."""
    cluster.start_scheduler()
    cluster.start_agent("n1", 1)
    work = _workdir(cluster)
    then = 'until [ -e go ]; do sleep 0.1; done; echo "end $SLURM_RESTART_COUNT"\n'
    job = _submit(cluster, work, "adopted", "#SBATCH --open-mode=append", then=then)
    out = work / f"slurm-{job}.out"
    wait_for(lambda: out.exists() and out.read_text() == "attempt 0\n", 60, what=str(out))
    cluster.cli("gcontrol", "requeue", job, check=True)
    both = "attempt 0\nattempt 1\n"
    wait_for(lambda: out.read_text() == both, 60, what="the second attempt's line")
    cluster.kill("agent-n1", signal.SIGKILL)
    cluster.start_agent("n1", 1)
    wait_for(lambda: "adopted running job" in cluster.log("agent-n1"), 60, what="the job adopted")
    (work / "go").touch()
    assert cluster.wait_state(job, "COMPLETED")["attempt"] == 2
    assert out.read_text() == both + "end 1\n"
