"""The engine and servicers in-process behind grpc.aio on 127.0.0.1 (no Docker): bad requests
get INVALID_ARGUMENT naming the field and change nothing, unknown ids NOT_FOUND, state
conflicts their own codes, and a normal submit / list / cancel works."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import grpc
import pytest

from rota.v1 import rota_pb2 as pb
from tests.support.inprocess import InProcessScheduler


def run(test: Callable[[InProcessScheduler], Coroutine[Any, Any, None]], root: Path) -> None:
    async def main() -> None:
        async with InProcessScheduler(root) as sched:
            await asyncio.wait_for(test(sched), 60)

    asyncio.run(main())


async def refused(call: Awaitable[object]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return info.value.code(), info.value.details() or ""


def spec(**fields: object) -> pb.JobSpec:
    return pb.JobSpec(**{"image": "img", "command": ["true"], **fields})  # type: ignore[arg-type]


async def registered(sched: InProcessScheduler, name: str = "n1", gpus: int = 2) -> None:
    added = await sched.admin.AddNode(pb.AddNodeRequest(name=name, user="root"))
    await sched.agent(name, added.token, gpus)


async def everything(sched: InProcessScheduler) -> tuple[list[str], list[pb.Node]]:
    jobs = await sched.jobs.ListJobs(pb.ListJobsRequest(all_states=True))
    nodes = await sched.nodes.ListNodes(pb.ListNodesRequest())
    return [f"{j.id}:{j.state_code}" for j in jobs.jobs], list(nodes.nodes)


INVALID = grpc.StatusCode.INVALID_ARGUMENT


def test_bad_submissions_name_the_field_and_store_nothing(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await registered(sched)
        before = await everything(sched)
        cases = {
            "image": spec(image=""),
            "command": spec(command=[]),
            "resources": spec(resources=pb.Resources(gpus=64)),
            "dependency": spec(dependency="afterok:424242"),
            "array": spec(array="9-1"),
            "reservation": spec(reservation="nope"),
            "constraint": spec(constraint="(v100|a100"),
            "constraint: no registered node has the features h100": spec(constraint="h100"),
        }
        for field, bad in cases.items():
            items = [pb.SubmitItem(spec=spec()), pb.SubmitItem(spec=bad, source="b.yaml")]
            request = pb.SubmitJobsRequest(items=items, user="ann")
            code, details = await refused(sched.jobs.SubmitJobs(request))
            assert code is INVALID, field
            assert field in details, (field, details)
        duplicate = [pb.SubmitItem(spec=spec(), client_request_id="r")] * 2
        code, details = await refused(
            sched.jobs.SubmitJobs(pb.SubmitJobsRequest(items=duplicate, user="ann"))
        )
        assert code is INVALID and "client_request_id" in details
        assert await everything(sched) == before, "a refused request changes nothing"

    run(test, tmp_path)


def test_bad_listing_control_cancel_and_admin_requests_name_the_field(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await registered(sched)
        before = await everything(sched)
        cases: dict[str, Awaitable[object]] = {
            "page_token": sched.jobs.ListJobs(pb.ListJobsRequest(page_token="x")),
            "states": sched.jobs.ListJobs(pb.ListJobsRequest(states=[99])),
            "action": sched.jobs.ControlJobs(pb.ControlJobsRequest(ids=["1"])),
            "ids": sched.jobs.CancelJobs(pb.CancelJobsRequest(user="ann")),
            "reason": sched.admin.DrainNode(pb.DrainNodeRequest(name="n1", reason=" ")),
            "name": sched.admin.AddNode(pb.AddNodeRequest(name="bad name")),
            "index": sched.gpus.DrainGpu(pb.GpuActionRequest(node="n1", index=7)),
            "id": sched.jobs.GetJob(pb.GetJobRequest(id="x1")),
        }
        for field, call in cases.items():
            code, details = await refused(call)
            assert code is INVALID, (field, code, details)
            assert field in details or "job id" in details, (field, details)
        assert await everything(sched) == before

    run(test, tmp_path)


def test_unknown_ids_are_not_found_and_conflicts_have_their_own_codes(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await registered(sched)
        not_found = [
            sched.jobs.GetJob(pb.GetJobRequest(id="424242")),
            sched.jobs.ExplainJob(pb.ExplainJobRequest(id="424242")),
            sched.nodes.GetNode(pb.GetNodeRequest(name="ghost")),
            sched.admin.DrainNode(pb.DrainNodeRequest(name="ghost", reason="x")),
            sched.admin.RemoveNode(pb.RemoveNodeRequest(name="ghost")),
            sched.gpus.ResumeGpu(pb.GpuActionRequest(node="ghost", index=0)),
        ]
        for call in not_found:
            code, details = await refused(call)
            assert code is grpc.StatusCode.NOT_FOUND and ("424242" in details or "ghost" in details)
        code, _ = await refused(sched.admin.AddNode(pb.AddNodeRequest(name="n1")))
        assert code is grpc.StatusCode.ALREADY_EXISTS
        code, details = await refused(sched.admin.ResumeNode(pb.ResumeNodeRequest(name="n1")))
        assert code is grpc.StatusCode.FAILED_PRECONDITION and "not drained" in details
        stream = sched.agent_service.Connect(iter([pb.AgentMessage(heartbeat=pb.Heartbeat())]))
        code, details = await refused(stream.read())
        assert code is INVALID and "hello" in details
        code, _ = await refused(sched.agent("n1", "wrong token"))
        assert code is grpc.StatusCode.UNAUTHENTICATED

    run(test, tmp_path)


def test_submit_list_page_and_cancel(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await registered(sched)
        items = [pb.SubmitItem(spec=spec(hold=True), client_request_id=f"r{i}") for i in range(3)]
        reply = await sched.jobs.SubmitJobs(pb.SubmitJobsRequest(items=items, user="ann"))
        ids = [j.job_ids[0] for j in reply.jobs]
        again = await sched.jobs.SubmitJobs(pb.SubmitJobsRequest(items=items[:1], user="ann"))
        assert again.jobs[0].duplicate and list(again.jobs[0].job_ids) == ids[:1]
        seen, token = [], ""
        while True:
            page = await sched.jobs.ListJobs(pb.ListJobsRequest(page_size=2, page_token=token))
            seen += [(j.id, j.state_code, j.user) for j in page.jobs]
            token = page.next_page_token
            if not token:
                break
        assert seen == [(i, "PD", "admin") for i in ids], "the token's user, not the field"
        cancelled = await sched.jobs.CancelJobs(pb.CancelJobsRequest(ids=[ids[0], "999"]))
        assert [(r.ok, r.message) for r in cancelled.results] == [
            (True, ""),
            (False, "job 999 does not exist"),
        ]
        job = await sched.jobs.GetJob(pb.GetJobRequest(id=ids[0]))
        assert job.state_code == "CA" and [e.new_state for e in job.events][-1] == "CANCELLED"
        listed = await sched.jobs.ListJobs(pb.ListJobsRequest())
        assert [j.id for j in listed.jobs] == ids[1:], "the default listing shows live jobs"
        node = await sched.nodes.GetNode(pb.GetNodeRequest(name="n1"))
        assert (node.state, node.gpus_total) == ("IDLE", 2)

    run(test, tmp_path)


def test_a_large_array_is_stored_found_by_task_listed_in_pages_and_cancelled_whole(
    tmp_path: Path,
) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await registered(sched)
        items = [
            pb.SubmitItem(spec=spec(hold=True, array="0-2499")),  # > 1,000: the chunked path
            pb.SubmitItem(spec=spec(hold=True)),
        ]
        reply = await sched.jobs.SubmitJobs(pb.SubmitJobsRequest(items=items, user="ann"))
        tasks, (single,) = (list(j.job_ids) for j in reply.jobs)
        array = tasks[0].split("_")[0]
        assert tasks == [f"{array}_{t}" for t in range(2500)]
        sizes, seen, token = [], [], ""
        while True:
            page = await sched.jobs.ListJobs(pb.ListJobsRequest(page_token=token))
            sizes.append(len(page.jobs))
            seen += [j.id for j in page.jobs]
            token = page.next_page_token
            if not token:
                break
        assert sizes == [2000, 501] and seen == [*tasks, single]
        named = await sched.jobs.ListJobs(pb.ListJobsRequest(ids=[f"{array}_7"]))
        assert [(j.id, j.state_code) for j in named.jobs] == [(f"{array}_7", "PD")]
        cancelled = await sched.jobs.CancelJobs(
            # 999 would be task 998's own integer id (its SLURM_JOB_ID): name no job at all
            pb.CancelJobsRequest(ids=[array, "999999", single], user="ann")
        )
        assert [(r.id, r.ok, r.message) for r in cancelled.results] == [
            (array, True, ""),
            ("999999", False, "job 999999 does not exist"),
            (single, True, ""),
        ]
        left = await sched.jobs.ListJobs(pb.ListJobsRequest())
        assert list(left.jobs) == []
        everyone = await sched.jobs.ListJobs(pb.ListJobsRequest(ids=[array], all_states=True))
        assert {j.state_code for j in everyone.jobs} == {"CA"} and len(everyone.jobs) == 2000

    run(test, tmp_path)
