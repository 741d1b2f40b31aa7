"""A dry run (``gsub --test-only``) never holds the core thread (fifth attack): each item is a
whole scheduling decision, and they were made on the core thread, so one request of bob's with
1,000 items against a queue of 9,000 jobs held it for 15 s: every listing, submission and job
report of every user waited. They are now made on a thread of their own, one at a time."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster, free_port, fresh_passes
from tests.support.fake_agent import FakeAgent
from tests.support.tokens import channel as token_channel

ITEMS = 300


def test_a_large_dry_run_does_not_hold_up_listings(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    http = free_port()
    cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}")
    agents = [FakeAgent(cluster.address, f"n{i}") for i in range(20)]
    channel = token_channel(cluster.address, cluster.add_user("bob"))
    try:
        for agent in agents:
            agent.start()
        nodes = pb_grpc.NodeServiceStub(channel)
        jobs = pb_grpc.JobServiceStub(channel)
        queue = pb.JobSpec(
            image="img", command=["true"], resources=pb.Resources(gpus=8), array="0-8999"
        )
        jobs.SubmitJobs(pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=queue)]), timeout=120)
        fresh_passes(http, 1, timeout=120)
        probe = pb.SubmitItem(
            spec=pb.JobSpec(image="img", command=["true"], resources=pb.Resources(gpus=1))
        )
        answers: list[pb.SubmitJobsResponse] = []

        def dry_run() -> None:
            request = pb.SubmitJobsRequest(items=[probe] * ITEMS, test_only=True)
            answers.append(jobs.SubmitJobs(request, timeout=300))

        thread = threading.Thread(target=dry_run)
        thread.start()
        waits = []
        while thread.is_alive():
            sent = time.monotonic()
            listed = nodes.ListNodes(pb.ListNodesRequest(), timeout=300)
            waits.append(time.monotonic() - sent)
            assert len(listed.nodes) == 20
            time.sleep(0.02)
        thread.join()
        (answer,) = answers
        assert len(answer.jobs) == ITEMS and all(not j.job_ids for j in answer.jobs)
        # before: ListNodes waited for the whole dry run (seconds)
        assert max(waits) <= 1.0, f"ListNodes waited {max(waits):.1f} s behind a dry run"
    finally:
        channel.close()
        for agent in agents:
            agent.stop()
        cluster.stop()
