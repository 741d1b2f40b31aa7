"""A user's sessions are counted (fifth attack): each ``gattach``, forwarded connection or
terminal holds up to a window (4 MiB) of the scheduler's memory each way and a thread and a
process on the node, and bob could open them without end over gRPC (the HTTP port counts its
own). Now one user has at most 64 open or waiting; the next is refused, others' are not."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster, wait_for
from tests.support.fake_agent import FakeAgent
from tests.support.tokens import bearer


def test_a_user_has_at_most_64_sessions_at_once(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    cluster.start_scheduler("--open-registration")
    agent = FakeAgent(cluster.address, "n1")  # launched jobs stay CONFIGURING: sessions wait
    tokens = {"alice": cluster.add_user("alice"), "bob": cluster.add_user("bob")}
    channel = grpc.insecure_channel(cluster.address)
    done = threading.Event()
    try:
        agent.start()
        jobs = pb_grpc.JobServiceStub(channel)
        interactive = pb_grpc.InteractiveServiceStub(channel)

        def submit(who: str) -> str:
            spec = pb.JobSpec(image="img", command=["sleep", "1d"])
            request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)])
            answer = jobs.SubmitJobs(request, metadata=[bearer(tokens[who])], timeout=30)
            return answer.jobs[0].job_ids[0]

        def session(who: str, job: str) -> Any:
            def requests() -> Iterator[pb.InteractRequest]:
                yield pb.InteractRequest(job_id=job, kind="exec", command=["sh"])
                done.wait(60)

            return interactive.Interact(requests(), metadata=[bearer(tokens[who])], timeout=60)

        mine, hers = submit("bob"), submit("alice")
        wait_for(lambda: agent.received["launch"] >= 2, 30, what="both jobs launched")
        held = [session("bob", mine) for _ in range(64)]
        for call in held:
            assert next(call).state == "CONFIGURING"  # waiting for the job, counted
        with pytest.raises(grpc.RpcError) as refused:
            next(session("bob", mine))
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "at most 64 at once" in (refused.value.details() or "")
        theirs = session("alice", hers)
        assert next(theirs).state == "CONFIGURING"
        held.pop().cancel()

        def another() -> bool:  # once the scheduler has seen one end, bob may open another
            try:
                held.append(session("bob", mine))
                return next(held[-1]).state == "CONFIGURING"
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.FAILED_PRECONDITION
                return False

        wait_for(another, 30, what="a session of bob's once one ended")
    finally:
        done.set()
        channel.close()
        agent.stop()
        cluster.stop()
