"""Partitions on a real cluster: two agents in two partitions, a batch script with
``#SBATCH -p a,b``, and what gqueue and ginfo show."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster import Cluster

SCRIPT = """#!/bin/sh
#SBATCH -p a,b
#SBATCH --gres=gpu:2
#SBATCH --time=5:00
#ROTA image={image}
until [ -e go ]; do sleep 0.1; done
echo done
"""


@pytest.mark.docker
def test_a_script_naming_two_partitions_runs_in_either(
    cluster: Cluster, test_image: str, tmp_path: Path
) -> None:
    n1, n2 = cluster.node_name("n1"), cluster.node_name("n2")
    config = tmp_path / "scheduler.yaml"
    config.write_text(
        "scheduler:\n"
        "  open_registration: true\n"
        "  partitions:\n"
        f"    a: {{nodes: [{n1}], default: true, max_time: 1h}}\n"
        f"    b: {{nodes: [{n2}]}}\n"
    )
    cluster.start_scheduler("--config", str(config))
    cluster.start_agent("n1", gpus=2)
    cluster.start_agent("n2", gpus=2)
    script = tmp_path / "either.sh"
    script.write_text(SCRIPT.format(image=test_image))
    # in the submission directory: both run until the test makes "go", so surely side by side
    ids = [
        cluster.cli("gsub", "--parsable", str(script), cwd=cluster.root).stdout.strip()
        for _ in range(2)
    ]
    assert all(i.isdigit() for i in ids), ids
    for job_id in ids:
        cluster.wait_state(job_id, "RUNNING")
    (cluster.root / "go").write_text("")
    for job_id in ids:
        cluster.wait_state(job_id, "COMPLETED")
    shown = cluster.cli("gqueue", "-t", "all", "-h", "-o", "%i %P %N", check=True).stdout
    placed = {tuple(line.split()[1:]) for line in shown.splitlines() if line.split()[0] in ids}
    assert placed == {("a", n1), ("b", n2)}
    cluster.env_extra["ROTA_DEFAULT_IMAGE"] = test_image
    refused = cluster.cli("gsub", "-p", "gpu", "--wrap", "true")
    assert refused.returncode == 2, refused.stderr
    assert "partition: unknown partition 'gpu'; partitions: a, b" in refused.stderr
    info = cluster.cli("ginfo", "-P", check=True).stdout.splitlines()
    assert info[0].split() == ["PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE", "NODELIST"]
    assert info[1].split() == ["a*", "up", "01:00:00", "1", "idle", n1]
    assert info[2].split() == ["b", "up", "infinite", "1", "idle", n2]
    only_b = cluster.cli("ginfo", "-p", "b", check=True).stdout
    assert n2 in only_b and n1 not in only_b
