"""gacct -j takes an array task's own integer id (its SLURM_JOB_ID), as gqueue -j, gcancel and
gcontrol do: a script that logged $SLURM_JOB_ID finds its record with it, as with sacct -j;
and sacct's -X and --format."""

from __future__ import annotations

import json

import pytest

from tests.cluster import TEST_IMAGE, Cluster


@pytest.mark.docker
def test_gacct_finds_an_array_task_by_its_own_job_id(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    result = cluster.cli(
        "gsub",
        "--wait",
        "--parsable",
        f"--container-image={TEST_IMAGE}",
        "--array=0-1",
        "--wrap",
        "echo $SLURM_JOB_ID",
        cwd=cluster.root,
    )
    assert result.returncode == 0, result.stderr
    array = result.stdout.strip()
    second = cluster.job(f"{array}_1")
    own_id = str(second["job_id"])
    assert own_id != array  # the second task's integer id is not the array's

    rows = json.loads(cluster.cli("gacct", "-j", own_id, "--json", check=True).stdout)
    assert [r["id"] for r in rows if "." not in r["id"]] == [f"{array}_1"]
    assert {r["id"] for r in rows} >= {f"{array}_1", f"{array}_1.batch"}
    # the array's id still names every task
    rows = json.loads(cluster.cli("gacct", "-j", array, "--json", check=True).stdout)
    assert sorted(r["id"] for r in rows if "." not in r["id"]) == [f"{array}_0", f"{array}_1"]
    # sacct's habits: -X leaves out the steps' lines, --format picks columns by sacct's names
    out = cluster.cli("gacct", "-j", array, "-X", "--format=JobID,State,ExitCode%5", check=True)
    lines = [line.split() for line in out.stdout.splitlines()]
    assert lines[0] == ["JOBID", "STATE", "EXIT"]
    assert sorted(lines[1:]) == [[f"{array}_0", "COMPLETED", "0"], [f"{array}_1", "COMPLETED", "0"]]
    bad = cluster.cli("gacct", "-o", "JobID,MaxRSS")
    assert bad.returncode == 2
    assert "--format: 'MaxRSS' is not a field gacct shows; fields: JobID JobName" in bad.stderr
