"""A job's output read through the scheduler is windowed (fifth attack): bob's job printed
32 MB (200 MB in the attack), and a ``StreamLogs`` of it that he opened and never read made the scheduler hold all
of it (the node sends as fast as its stream takes it, and the scheduler queued every chunk
for the slow reader); a few such calls took gigabytes of the scheduler's memory. Now the node
sends at most the scheduler's window unacknowledged, and the scheduler acknowledges what the
reader took."""

from __future__ import annotations

import time

import grpc
import pytest

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import TEST_IMAGE, Cluster
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
