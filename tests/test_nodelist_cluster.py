"""sbatch's -w/--nodelist and -x/--exclude on a real cluster: jobs run on the nodes they list
and never on those they exclude; a list naming an unregistered node is refused at submission;
a job whose listed node is drained waits with NodeDown and runs once the node is resumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster import Cluster, wait_for

SCRIPT = """#!/bin/sh
#SBATCH -w {nodes}
#SBATCH --gres=gpu:1
#ROTA image={image}
echo on $SLURMD_NODENAME
"""


@pytest.mark.docker
def test_jobs_run_only_on_listed_nodes_and_never_on_excluded_ones(
    cluster: Cluster, test_image: str, tmp_path: Path
) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    cluster.start_agent("n2", gpus=1)
    n1, n2 = cluster.node_name("n1"), cluster.node_name("n2")
    cluster.env_extra["ROTA_DEFAULT_IMAGE"] = test_image
    script = tmp_path / "listed.sh"
    script.write_text(SCRIPT.format(nodes=n2, image=test_image))
    listed = cluster.cli("gsub", "--parsable", str(script), check=True).stdout.strip()
    excluded = cluster.cli(
        "gsub", "--parsable", "-x", n1, "--gres=gpu:1", "--wrap", "true", check=True
    ).stdout.strip()
    for job in (listed, excluded):
        assert cluster.wait_state(job, "COMPLETED")["nodes"] == [n2]

    unknown = cluster.cli("gsub", "-w", f"{n1},nx-[1-2]", "--wrap", "true")
    assert unknown.returncode == 2
    assert "nodelist: nx-[1-2] are not registered" in unknown.stderr
    nothing_left = cluster.cli("gsub", "-w", n1, "-x", n1, "--wrap", "true")
    assert "nodelist: the job needs 1 node(s), but the listed nodes less" in nothing_left.stderr

    cluster.cli("gadmin", "node", "drain", n1, "--reason", "test", check=True)
    waits = cluster.cli(
        "gsub", "--parsable", "-w", n1, "--gres=gpu:1", "--wrap", "true", check=True
    ).stdout.strip()
    assert cluster.wait_state(waits, "PENDING")
    wait_for(lambda: cluster.job(waits)["reason"] == "NodeDown", 30, what="NodeDown")
    ranked = cluster.cli("gqueue", "-h", "-j", waits, "-o", "%Q %p", check=True).stdout.split()
    assert int(ranked[0]) > 0  # the rota policy's multifactor priority (squeue's %Q, %p)
    assert ranked[1] == f"{int(ranked[0]) / 0xFFFFFFFF:16.14f}"
    shown = cluster.cli("gcontrol", "show", "job", waits, check=True).stdout
    assert f"ReqNodeList: {n1}" in shown and "ExcNodeList: (null)" in shown
    cluster.cli("gadmin", "node", "resume", n1, check=True)
    assert cluster.wait_state(waits, "COMPLETED")["nodes"] == [n1]
