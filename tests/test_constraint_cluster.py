"""sbatch's -C/--constraint on a real cluster of agents labelled differently: an OR runs on
whichever matching node is free, a two-node matching OR waits for, and runs on, two nodes that
share one alternative (never one of each), a job with counts ([v100*1&a100*1]) gets one node of
each, and a constraint no registered node (or pair of nodes) satisfies is refused at
submission naming it; gqueue's %f, gcontrol show job and scontrol show job inside the job show
it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster import Cluster, wait_for

SCRIPT = """#!/bin/sh
#SBATCH {directive}
#SBATCH --gres=gpu:1
#ROTA image={image}
echo on $SLURMD_NODENAME
scontrol show job "$SLURM_JOB_ID" | grep -E "Features=|Partition="
"""


@pytest.mark.docker
def test_jobs_run_only_on_nodes_with_their_features(
    cluster: Cluster, test_image: str, tmp_path: Path
) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", 1, "--labels", "v100=true,rack1=true")
    cluster.start_agent("n2", 1, "--labels", "features=a100 rack1")
    cluster.start_agent("n3", 1, "--labels", "features=rack2")
    n1, n2 = cluster.node_name("n1"), cluster.node_name("n2")
    cluster.env_extra["ROTA_DEFAULT_IMAGE"] = test_image

    def script(name: str, directive: str) -> str:
        path = tmp_path / name
        path.write_text(SCRIPT.format(directive=directive, image=test_image))
        return str(path)

    blocker = cluster.cli(
        "gsub",
        "--parsable",
        "-C",
        "v100",
        "--gres=gpu:1",
        "--wrap",
        "trap 'exit 0' TERM; sleep 60 & wait",
        check=True,
    ).stdout.strip()
    assert cluster.wait_state(blocker, "RUNNING")["nodes"] == [n1]
    either = cluster.cli(
        "gsub", "--parsable", script("either.sh", '-C "v100|a100"'), check=True
    ).stdout.strip()
    assert cluster.wait_state(either, "COMPLETED")["nodes"] == [n2]  # n1 is busy
    shown = cluster.cli("gqueue", "-h", "-t", "all", "-j", either, "-o", "%f", check=True)
    assert shown.stdout.strip() == "v100|a100"
    assert "Features: v100|a100" in cluster.cli("gcontrol", "show", "job", either).stdout
    # inside the job, scontrol show job prints it as SLURM's does
    inside = cluster.cli("glogs", either, check=True).stdout.splitlines()
    assert inside[1:] == ["   Partition=default", "   Features=v100|a100 DelayBoot=00:00:00"]

    rack = cluster.cli(
        "gsub", "--parsable", script("rack.sh", '-N 2 -C "[rack1|rack2]"'), check=True
    ).stdout.strip()
    # n2 (rack1) and n3 (rack2) are free, but rack1 has a busy node and rack2 one node only
    wait_for(lambda: cluster.job(rack)["reason"] == "Resources", 30, what="Resources")
    assert cluster.job(rack)["state"] == "PENDING"
    cluster.cli("gcancel", blocker, check=True)
    assert sorted(cluster.wait_state(rack, "COMPLETED")["nodes"]) == sorted([n1, n2])

    # counts: of the job's 2 nodes, one has v100 and one a100 (n1 and n2; n3 has neither)
    counted = cluster.cli(
        "gsub", "--parsable", script("counted.sh", '-N 2 -C "[v100*1&a100*1]"'), check=True
    )
    assert counted.stderr == ""  # no warning: the counts are kept
    job = cluster.wait_state(counted.stdout.strip(), "COMPLETED")
    assert sorted(job["nodes"]) == sorted([n1, n2])
    few = cluster.cli("gsub", "-N", "1", "-C", "[v100*1&a100*1]", "--wrap", "true")
    assert few.returncode == 2
    assert (
        "constraint: [v100*1&a100*1]: its counts ask for 2 node(s) but the job has 1 (nodes)"
    ) in few.stderr
    twice = cluster.cli("gsub", "-N", "2", "-C", "v100*2", "--wrap", "true")
    assert twice.returncode == 2
    assert "constraint: v100*2: no 2 registered nodes that could hold it meet its counts" in (
        twice.stderr
    )

    apart = cluster.cli("gsub", script("apart.sh", '-N 2 -C "[v100|a100]"'))
    assert apart.returncode == 2
    assert (
        "constraint: [v100|a100]: no 2 registered nodes that could hold it share one "
        "alternative of its [...] group (features here: a100, rack1, rack2, v100)"
    ) in apart.stderr
    missing = cluster.cli("gsub", "-C", "h100|b200", "--wrap", "true")
    assert missing.returncode == 2
    assert "constraint: no registered node has the features h100|b200" in missing.stderr
    bad = cluster.cli("gsub", "-C", "v100&&a100", "--wrap", "true")
    assert bad.returncode == 2
    assert "constraint: 'v100&&a100': unexpected '&'" in bad.stderr
