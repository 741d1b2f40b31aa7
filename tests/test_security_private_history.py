"""Another user's job history keeps its private parts private (fifth attack): ``GetJob`` (and
the web API's job) hid alice's output path from bob in the spec, but showed it in the job's
reason and events, where the node's words for a failure quote it (``cannot write
/data/alice/project-x/out-1.txt``), as they quote mount sources and webhook hosts."""

from __future__ import annotations

import pytest

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import TEST_IMAGE, Cluster
from tests.faults_support import config_file
from tests.support.tokens import channel as token_channel


@pytest.mark.docker
def test_a_failed_jobs_words_are_its_owners(cluster: Cluster) -> None:
    cluster.start_scheduler("--open-registration", "--config", config_file(cluster))
    cluster.start_agent("n1", gpus=1)
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    secret = f"{cluster.root}/alice-project-x/out-%j.txt"
    script = f"#!/bin/sh\n#ROTA image={TEST_IMAGE}\n#SBATCH -o {secret}\necho hi\n"
    cluster.env_extra["ROTA_TOKEN"] = alice
    job = cluster.cli("gsub", "--parsable", str(cluster.write_job("a.sh", script)), check=True)
    job_id = job.stdout.strip()
    assert cluster.wait_state(job_id, "FAILED", "COMPLETED", timeout=60)["state"] == "FAILED"
    for token, sees in ((alice, True), (bob, False)):
        channel = token_channel(cluster.address, token)
        try:
            shown = pb_grpc.JobServiceStub(channel).GetJob(pb.GetJobRequest(id=job_id))
        finally:
            channel.close()
        assert ("alice-project-x" in str(shown)) is sees, str(shown)
        assert [e.new_state for e in shown.events] == ["PENDING", "CONFIGURING", "FAILED"]
        assert shown.state == pb.FAILED
