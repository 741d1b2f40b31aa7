"""A large submission in progress never holds up what every user and agent needs meanwhile."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster, free_port, fresh_passes, wait_for
from tests.support.fake_agent import FakeAgent
from tests.support.tokens import channel as token_channel


def test_a_10000_task_array_does_not_delay_list_nodes_or_drop_agent_streams(
    tmp_path: Path,
) -> None:
    cluster = Cluster(tmp_path)
    http = free_port()
    cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}")
    agent = FakeAgent(cluster.address, "n1", interval=0.2)
    channel = token_channel(cluster.address, cluster.token)
    try:
        agent.start()
        nodes = pb_grpc.NodeServiceStub(channel)
        jobs = pb_grpc.JobServiceStub(channel)
        nodes.ListNodes(pb.ListNodesRequest(), timeout=10)  # the channel is up
        spec = pb.JobSpec(
            image="img", command=["true"], resources=pb.Resources(gpus=1), array="0-9999"
        )
        request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)], user="ann")
        answer: list[pb.SubmitJobsResponse] = []
        span: dict[str, float] = {}

        def submit() -> None:
            span["start"] = time.monotonic()
            answer.append(jobs.SubmitJobs(request, timeout=120))
            span["end"] = time.monotonic()

        thread = threading.Thread(target=submit)
        thread.start()
        samples: list[tuple[float, float]] = []  # (sent, answered) of ListNodes
        while thread.is_alive():
            sent = time.monotonic()
            listed = nodes.ListNodes(pb.ListNodesRequest(), timeout=10)
            samples.append((sent, time.monotonic()))
            assert [n.name for n in listed.nodes] == ["n1"]
            time.sleep(0.01)
        thread.join()

        (submitted,) = answer[0].jobs
        assert len(submitted.job_ids) == 10_000
        during = [end - sent for sent, end in samples if sent < span["end"] and end > span["start"]]
        assert during, "no ListNodes overlapped the submission"
        # A held core made every ListNodes wait for the whole submission (~40 s at 100,000
        # tasks). The typical answer stays within 100 ms; the slowest gets slack for a loaded
        # machine (bench/large_arrays.py measures the figures).
        typical = statistics.median(during)
        assert typical <= 0.1, f"ListNodes took {typical * 1000:.0f} ms (median) meanwhile"
        assert max(during) <= 1.0, f"ListNodes took {max(during) * 1000:.0f} ms meanwhile"
        beats = len(agent.pongs)
        fresh_passes(http)  # the pass that follows
        wait_for(lambda: len(agent.pongs) >= beats + 3, 10, what="three more heartbeats")
        assert not agent.dropped, agent.dropped
        assert agent.pongs and max(agent.pongs) < 2.0
    finally:
        channel.close()
        agent.stop()
        cluster.stop()
