"""A job's container is named after its node (``hostname``, ``srun hostname``), as SLURM's
tasks see their node's name: a sanity check researchers run first on a new cluster."""

from __future__ import annotations

import pytest

from tests.cluster import TEST_IMAGE, Cluster


@pytest.mark.docker
def test_hostname_in_a_job_is_its_nodes_name(cluster: Cluster) -> None:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    job = cluster.submit(
        f'image: {TEST_IMAGE}\ncommand: ["sh", "-c", "hostname; echo $HOSTNAME"]\n'
    )
    assert cluster.wait_state(job, "COMPLETED")["exit_code"] == 0
    node = cluster.node_name("n1")
    assert cluster.cli("glogs", job, check=True).stdout == f"{node}\n{node}\n"
