"""Issue 25 item 4: at most N interactive sessions and M interactive GPUs per user (settings
interactive_max_sessions, interactive_max_gpus), refused at submission naming the limit;
other users and batch jobs are not counted. A real gRPC scheduler in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler


def session(gpus: int = 0, **fields: object) -> pb.SubmitItem:
    spec = pb.JobSpec(
        image="img",
        command=["sh"],
        resources=pb.Resources(gpus=gpus),
        interactive=True,
        tty=True,
        **fields,  # type: ignore[arg-type]
    )
    return pb.SubmitItem(spec=spec, source="grun")


async def submit(stub: pb_grpc.JobServiceStub, *items: pb.SubmitItem) -> list[str]:
    reply = await stub.SubmitJobs(pb.SubmitJobsRequest(items=list(items)))
    return [i for job in reply.jobs for i in job.job_ids]


async def refusal(stub: pb_grpc.JobServiceStub, *items: pb.SubmitItem) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await submit(stub, *items)
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    return info.value.details() or ""


def test_sessions_and_gpus_per_user_are_limited(tmp_path: Path) -> None:
    async def main() -> None:
        async with InProcessScheduler(
            tmp_path, interactive_max_sessions=2, interactive_max_gpus=3
        ) as sched:
            added = await sched.admin.AddNode(pb.AddNodeRequest(name="n1", user="root"))
            await sched.agent("n1", added.token, gpus=8)
            ann = pb_grpc.JobServiceStub(sched.user_channel("ann"))
            bob = pb_grpc.JobServiceStub(sched.user_channel("bob"))
            first = await submit(ann, session(gpus=2, hold=True))  # held: cancelled at once
            why = await refusal(ann, session(gpus=2))
            assert "ann would have 4 GPUs in interactive sessions; the limit is 3" in why
            assert "interactive_max_gpus" in why
            await submit(ann, session(gpus=1))
            why = await refusal(ann, session())
            assert "ann would have 3 interactive sessions; the limit is 2" in why
            assert "interactive_max_sessions" in why
            await submit(bob, session(gpus=3))  # bob's own sessions
            batch = pb.SubmitItem(spec=pb.JobSpec(image="img", command=["true"]))
            await submit(ann, batch)  # batch jobs are not sessions
            assert "an interactive session is one job" in await refusal(bob, session(array="0-1"))
            await sched.jobs.CancelJobs(pb.CancelJobsRequest(ids=first))
            await submit(ann, session(gpus=2))  # an ended session no longer counts
            listed = await ann.ListJobs(pb.ListJobsRequest())
            assert sum(j.spec.interactive for j in listed.jobs) == 3

    asyncio.run(asyncio.wait_for(main(), 60))
