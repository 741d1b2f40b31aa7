"""``glogs -f`` right after ``gsub`` (the job still pending) waits for the job to start and
follows it, as ``tail -F slurm-N.out`` does under SLURM; real scheduler, agent, container."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cluster import TEST_IMAGE, Cluster

JOB = f'image: {TEST_IMAGE}\ncommand: ["sh", "-c", "echo started-$((6*7))"]\n'


def _follow(cluster: Cluster, job_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rota.cli.glogs", "-f", job_id],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.docker
def test_glogs_follow_waits_for_a_pending_job_and_says_why(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    held = cluster.submit(JOB, "--hold")
    follow = _follow(cluster, held)
    assert follow.stderr is not None
    line = follow.stderr.readline()
    assert line == f"glogs: job {held} is pending (JobHeldUser); waiting for it to start\n"
    cluster.cli("gcontrol", "release", held, check=True)
    out, err = follow.communicate(timeout=60)
    assert (follow.returncode, out, err) == (0, "started-42\n", "")

    never = cluster.submit(JOB, "--hold")
    follow = _follow(cluster, never)
    assert follow.stderr is not None
    assert "waiting for it to start" in follow.stderr.readline()
    cluster.cli("gcancel", never, check=True)
    out, err = follow.communicate(timeout=60)
    assert follow.returncode == 1
    assert f"job {never} ended CANCELLED without starting: it has no output" in err
