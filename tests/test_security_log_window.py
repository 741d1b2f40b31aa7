"""A job's output read through the scheduler is windowed (fifth attack): bob's job printed
32 MB (200 MB in the attack), and a ``StreamLogs`` of it that he opened and never read made the scheduler hold all
of it (the node sends as fast as its stream takes it, and the scheduler queued every chunk
for the slow reader); a few such calls took gigabytes of the scheduler's memory. Now the node
sends at most the scheduler's window unacknowledged, and the scheduler acknowledges what the
reader took."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.support.fake_agent import FakeAgent
from tests.support.tokens import bearer

SIZE = 32_000_000

BIG = f"""#!/bin/sh
#ROTA image={TEST_IMAGE}
yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz012345678 | head -c {SIZE}
"""


def _rss(pid: int) -> int:
    """Resident bytes of process ``pid``."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


@pytest.mark.docker
def test_an_unread_log_stream_holds_a_bounded_part_of_the_output(cluster: Cluster) -> None:
    scheduler = cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    job = cluster.cli(
        "gsub", "--parsable", str(cluster.write_job("big.sh", BIG)), check=True
    ).stdout.strip()
    assert cluster.wait_state(job, "COMPLETED", "FAILED", timeout=120)["state"] == "COMPLETED"
    channel = grpc.insecure_channel(cluster.address)
    try:
        jobs = pb_grpc.JobServiceStub(channel)
        before = _rss(scheduler.pid)
        stream = jobs.StreamLogs(
            pb.StreamLogsRequest(id=job), metadata=[bearer(cluster.token)], timeout=120
        )
        first = next(stream)  # opened, then left unread while the node sends
        time.sleep(4)
        held = _rss(scheduler.pid) - before
        assert held < 16 << 20, f"the scheduler grew by {held >> 20} MiB for one unread stream"
        total = len(first.data) + sum(len(chunk.data) for chunk in stream)
        assert total == SIZE  # read on, the whole output arrives
    finally:
        channel.close()


def test_a_user_reads_at_most_eight_outputs_at_once(tmp_path: Path) -> None:
    """Each output being read holds a thread of the node's agent and up to a window of the
    scheduler's memory: bob's thousand ``glogs`` at once were a thousand of each."""
    cluster = Cluster(tmp_path)
    cluster.start_scheduler("--open-registration")
    agent = FakeAgent(cluster.address, "n1")  # answers no log request: every read stays open
    alice, bob = cluster.add_user("alice"), cluster.add_user("bob")
    channels = {who: grpc.insecure_channel(cluster.address) for who in ("alice", "bob")}
    tokens = {"alice": alice, "bob": bob}
    try:
        agent.start()
        agent.welcomed.wait(10)

        def stub(who: str) -> pb_grpc.JobServiceStub:
            return pb_grpc.JobServiceStub(channels[who])

        def submit(who: str) -> str:
            spec = pb.JobSpec(image="img", command=["true"])
            request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)])
            answer = stub(who).SubmitJobs(request, metadata=[bearer(tokens[who])], timeout=30)
            return answer.jobs[0].job_ids[0]

        def read(who: str, job: str) -> Any:
            request = pb.StreamLogsRequest(id=job, follow=True)
            return stub(who).StreamLogs(request, metadata=[bearer(tokens[who])], timeout=60)

        mine, hers = submit("bob"), submit("alice")
        wait_for(lambda: agent.received["launch"] >= 2, 30, what="both jobs launched")
        open_reads = [read("bob", mine) for _ in range(8)]
        wait_for(lambda: agent.received["log_request"] >= 8, 30, what="eight reads at the node")
        with pytest.raises(grpc.RpcError) as refused:
            next(read("bob", mine))
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "at most 8 at once" in (refused.value.details() or "")
        open_reads.append(read("alice", hers))  # hers is not refused: the node is asked
        wait_for(lambda: agent.received["log_request"] >= 9, 30, what="alice's read at the node")
        open_reads.pop(0).cancel()
        open_reads.append(read("bob", mine))  # one ended: bob may read again
        wait_for(
            lambda: agent.received["log_request"] >= 10, 30, what="bob's next read at the node"
        )
    finally:
        for channel in channels.values():
            channel.close()
        agent.stop()
        cluster.stop()
