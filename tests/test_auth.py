"""Users, tokens, authorisation, audit and node-scoped agents, through the real grpc.aio server
(in-process: the servicers and interceptors as the daemon wires them, service calls run at once
on the event loop: ``synchronous``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import grpc
import pytest

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import AgentStream, InProcessScheduler
from tests.support.tokens import aio_channel

DENIED = grpc.StatusCode.PERMISSION_DENIED
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED


def run(
    test: Callable[[InProcessScheduler], Coroutine[Any, Any, None]], root: Path, **config: object
) -> None:
    async def main() -> None:
        async with InProcessScheduler(root, synchronous=True, **config) as sched:
            await asyncio.wait_for(test(sched), 60)

    asyncio.run(main())


async def refused(call: Awaitable[object]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return info.value.code(), info.value.details() or ""


def spec(**fields: object) -> pb.JobSpec:
    base = {"image": "img", "command": ["true"], "env": {"API_KEY": "s3cret"}}
    return pb.JobSpec(**{**base, **fields})  # type: ignore[arg-type]


async def submit(jobs: pb_grpc.JobServiceStub, user_field: str = "", **fields: object) -> str:
    request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec(**fields))], user=user_field)
    return (await jobs.SubmitJobs(request)).jobs[0].job_ids[0]


async def with_node(sched: InProcessScheduler, name: str = "n1") -> AgentStream:
    added = await sched.admin.AddNode(pb.AddNodeRequest(name=name))
    return await sched.agent(name, added.token)


async def audit(sched: InProcessScheduler) -> list[pb.AuditEntry]:
    users = pb_grpc.UserServiceStub(sched.channel)
    return list((await users.ListAudit(pb.ListAuditRequest())).entries)


def test_tokens_missing_wrong_revoked_and_renewed(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        listing = pb.ListJobsRequest()
        bare = grpc.aio.insecure_channel(sched.address)
        code, details = await refused(pb_grpc.JobServiceStub(bare).ListJobs(listing))
        assert code is UNAUTHENTICATED and "ROTA_TOKEN" in details
        wrong = aio_channel(sched.address, "not-a-token")
        code, _ = await refused(pb_grpc.JobServiceStub(wrong).ListJobs(listing))
        assert code is UNAUTHENTICATED
        users = pb_grpc.UserServiceStub(sched.channel)
        made = await users.AddUser(pb.AddUserRequest(name="bob", uid=-1, gid=-1))
        bob = aio_channel(sched.address, made.token)
        await pb_grpc.JobServiceStub(bob).ListJobs(listing)
        await users.RevokeUser(pb.UserNameRequest(name="bob"))
        code, details = await refused(pb_grpc.JobServiceStub(bob).ListJobs(listing))
        assert code is UNAUTHENTICATED and "revoked" in details
        renewed = await users.NewToken(pb.UserNameRequest(name="bob"))
        again = aio_channel(sched.address, renewed.token)
        await pb_grpc.JobServiceStub(again).ListJobs(listing)
        code, _ = await refused(pb_grpc.JobServiceStub(bob).ListJobs(listing))
        assert code is UNAUTHENTICATED, "the old token stops working"
        listed = {u.name: u for u in (await users.ListUsers(pb.ListUsersRequest())).users}
        assert not listed["bob"].revoked and listed["admin"].admin
        refusals = [e for e in await audit(sched) if not e.allowed]
        assert [e.user for e in refusals] == ["", "", "", ""], "no valid token: no user"
        assert all(e.peer and e.action == "JobService/ListJobs" for e in refusals)
        for channel in (bare, wrong, bob, again):
            await channel.close()

    run(test, tmp_path)


def test_the_user_is_the_tokens_and_others_jobs_are_private(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        alice = pb_grpc.JobServiceStub(sched.user_channel("alice"))
        bob = pb_grpc.JobServiceStub(sched.user_channel("bob"))
        hook = "https://hooks.example.org/services/T0/B0/s3cret"
        out = "/data/alice/secret-%j.txt"
        job_id = await submit(alice, user_field="bob", hold=True, notify_url=hook, output=out)
        mine = await alice.GetJob(pb.GetJobRequest(id=job_id))
        assert mine.spec.notify_url == hook and mine.spec.output == out
        assert mine.user == "alice", "the request's user field is ignored"
        assert mine.account == "alice", "no account: the user's name"
        assert dict(mine.spec.env) == {"API_KEY": "s3cret"}
        theirs = await bob.GetJob(pb.GetJobRequest(id=job_id))
        assert theirs.user == "alice" and not theirs.spec.env and not theirs.spec.mounts
        assert not theirs.spec.notify_url, "a webhook URL may hold a token"
        assert not theirs.spec.output, "an output path names a file to attack"
        assert not theirs.spec.command, "a batch script travels whole in its command"
        assert list(mine.spec.command) == ["true"]
        listed = (await bob.ListJobs(pb.ListJobsRequest())).jobs
        assert [j.id for j in listed] == [job_id] and not listed[0].spec.env
        admin_view = await sched.jobs.GetJob(pb.GetJobRequest(id=job_id))
        assert dict(admin_view.spec.env) == {"API_KEY": "s3cret"}

        for call in (
            bob.CancelJobs(pb.CancelJobsRequest(ids=[job_id], user="alice")),
            bob.ControlJobs(pb.ControlJobsRequest(action=pb.REQUEUE, ids=[job_id])),
            bob.ControlJobs(pb.ControlJobsRequest(action=pb.RELEASE, ids=[job_id])),
            bob.StreamLogs(pb.StreamLogsRequest(id=job_id)).read(),
        ):
            code, details = await refused(call)
            assert code is DENIED and "belongs to alice" in details
        await sched.fresh_pass()  # once a pass has looked at it, a held job says so
        after = await alice.GetJob(pb.GetJobRequest(id=job_id))
        assert (after.state_code, after.reason) == ("PD", "JobHeldUser"), "nothing changed"
        done = await alice.CancelJobs(pb.CancelJobsRequest(ids=[job_id]))
        assert done.results[0].ok
        refusals = [e for e in await audit(sched) if not e.allowed]
        assert {(e.user, e.action) for e in refusals} == {
            ("bob", "JobService/CancelJobs"),
            ("bob", "JobService/ControlJobs"),
            ("bob", "JobService/StreamLogs"),
        }
        assert {e.target.split(" ")[0] for e in refusals} == {f"ids={job_id}", f"id={job_id}"}

    run(test, tmp_path, allowed_mounts=("/data",))  # the output file's folder


def test_admin_only_areas_and_submission_limits(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        channel = sched.user_channel("bob", accounts=("lab",))
        for call in (
            pb_grpc.AdminServiceStub(channel).DrainNode(
                pb.DrainNodeRequest(name="n1", reason="mine now")
            ),
            pb_grpc.AdminServiceStub(channel).AddNode(
                pb.AddNodeRequest(name="n1", rotate_token=True)
            ),
            pb_grpc.GpuServiceStub(channel).DrainGpu(pb.GpuActionRequest(node="n1", index=0)),
            pb_grpc.UserServiceStub(channel).AddUser(pb.AddUserRequest(name="eve", admin=True)),
            pb_grpc.UserServiceStub(channel).ListAudit(pb.ListAuditRequest()),
        ):
            code, details = await refused(call)
            assert code is DENIED and "admins only" in details
        node = await sched.nodes.GetNode(pb.GetNodeRequest(name="n1"))
        assert node.state == "IDLE", "the refused drain changed nothing"

        bob = pb_grpc.JobServiceStub(channel)
        for field, fields in (
            ("priority", {"priority": 5}),
            ("qos", {"qos": "high"}),
            ("account", {"account": "physics"}),
        ):
            code, details = await refused(submit(bob, **fields))
            assert code is DENIED and f"{field}:" in details
        job_id = await submit(bob, qos="normal", hold=False)
        assert (await bob.GetJob(pb.GetJobRequest(id=job_id))).account == "lab"
        assert await submit(sched.jobs, priority=5, qos="high", account="physics")

        drained = await sched.admin.DrainNode(pb.DrainNodeRequest(name="n1", reason="fix"))
        assert drained.state.startswith("DRAIN")
        entries = await audit(sched)
        allowed = [(e.user, e.action, e.target) for e in entries if e.allowed]
        assert ("admin", "AdminService/DrainNode", "name=n1 reason=fix") in allowed
        assert "JobService/SubmitJobs" not in {a for _, a, _ in allowed}, "no admin power used"
        refused_actions = {e.action for e in entries if not e.allowed}
        assert {"AdminService/DrainNode", "AdminService/AddNode", "JobService/SubmitJobs"} <= (
            refused_actions
        )

    run(test, tmp_path)


def test_an_admin_hold_is_released_by_an_admin_only(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        await sched.admin.DrainNode(pb.DrainNodeRequest(name="n1", reason="jobs stay pending"))
        bob = pb_grpc.JobServiceStub(sched.user_channel("bob"))
        job_id = await submit(bob)
        await sched.jobs.ControlJobs(pb.ControlJobsRequest(action=pb.HOLD, ids=[job_id]))
        release = pb.ControlJobsRequest(action=pb.RELEASE, ids=[job_id])
        code, details = await refused(bob.ControlJobs(release))
        assert code is DENIED and "held by an admin" in details
        own = await submit(bob)
        await bob.ControlJobs(pb.ControlJobsRequest(action=pb.HOLD, ids=[own]))
        freed = await bob.ControlJobs(pb.ControlJobsRequest(action=pb.RELEASE, ids=[own]))
        assert freed.results[0].ok, "a user's own hold is theirs to release"
        job = await bob.GetJob(pb.GetJobRequest(id=job_id))
        assert job.reason == "JobHeldAdmin"
        assert (await sched.jobs.ControlJobs(release)).results[0].ok

    run(test, tmp_path)


def test_a_node_token_speaks_for_its_node_only(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        tokens = {n: (await sched.admin.AddNode(pb.AddNodeRequest(name=n))).token for n in "ab"}
        a = await sched.agent("a", tokens["a"], gpus=1)
        b = await sched.agent("b", tokens["b"], gpus=1)
        alice = pb_grpc.JobServiceStub(sched.user_channel("alice"))
        job_id = await submit(alice, resources=pb.Resources(gpus=1), node_selector={})
        await sched.fresh_pass()  # places the job
        job = await alice.GetJob(pb.GetJobRequest(id=job_id))
        runner, other = (a, b) if list(job.nodes) == ["a"] else (b, a)
        launch = await runner.latest("launch")
        await other.handled()  # every order queued for it before now has arrived
        assert "API_KEY" not in str(other.received), "no other node sees the launch"
        forged = pb.AgentJobEvent(job_id=int(job_id), attempt=launch.attempt, kind=pb.EXITED)
        other.send.put_nowait(pb.AgentMessage(job_event=forged))
        await other.latest("ack")
        still = await alice.GetJob(pb.GetJobRequest(id=job_id))
        assert still.state_code in ("CF", "R"), "the forged report changed nothing"

        runner.send.put_nowait(
            pb.AgentMessage(
                job_event=pb.AgentJobEvent(
                    job_id=int(job_id), attempt=launch.attempt, kind=pb.STARTED
                )
            )
        )
        logs = alice.StreamLogs(pb.StreamLogsRequest(id=job_id))

        async def read_all() -> list[bytes]:
            return [c.data async for c in logs]

        reader = asyncio.create_task(read_all())
        request = await runner.latest("log_request")
        other.send.put_nowait(
            pb.AgentMessage(
                log_data=pb.LogData(request_id=request.request_id, data=b"forged\n", eof=True)
            )
        )
        await other.handled()  # the forged data was received (and refused) first
        runner.send.put_nowait(
            pb.AgentMessage(
                log_data=pb.LogData(request_id=request.request_id, data=b"real\n", eof=True)
            )
        )
        assert await reader == [b"real\n"]
        other_name = "b" if runner is a else "a"
        refusals = [e for e in await audit(sched) if not e.allowed]
        assert [(e.user, e.action) for e in refusals] == [
            (f"node:{other_name}", "AgentService/Connect job_event"),
            (f"node:{other_name}", "AgentService/Connect log_data"),
        ]

    run(test, tmp_path)


def test_a_registered_node_without_a_token_hash_is_refused(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        from rota.scheduler.cluster.model import NodeState

        sched.store.nodes.save(NodeState(name="bare"))
        sched.services.model.nodes["bare"] = NodeState(name="bare")
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await sched.agent("bare", "anything")
        assert info.value.code() is UNAUTHENTICATED and "no join token" in (
            info.value.details() or ""
        )
        entries = [e for e in await audit(sched) if not e.allowed]
        assert entries[-1].user == "node:bare" and entries[-1].detail.startswith("node 'bare'")

    run(test, tmp_path)


def test_large_submissions_and_cancels_are_authorised_before_any_task_exists(
    tmp_path: Path,
) -> None:
    async def test(sched: InProcessScheduler) -> None:
        await with_node(sched)
        bob = pb_grpc.JobServiceStub(sched.user_channel("bob"))
        alice = pb_grpc.JobServiceStub(sched.user_channel("alice"))
        big = {"array": "0-1499", "hold": True}  # over LARGE_SUBMISSION: the chunked path
        code, details = await refused(submit(bob, qos="high", **big))
        assert code is DENIED and "qos:" in details
        assert not (await sched.jobs.ListJobs(pb.ListJobsRequest(all_states=True))).jobs
        array_id = (await submit(bob, **big)).split("_")[0]
        listed = await sched.jobs.ListJobs(pb.ListJobsRequest(ids=[array_id]))
        assert len(listed.jobs) == 1500 and {j.user for j in listed.jobs} == {"bob"}
        code, details = await refused(alice.CancelJobs(pb.CancelJobsRequest(ids=[array_id])))
        assert code is DENIED and "belongs to bob" in details
        still = await sched.jobs.ListJobs(pb.ListJobsRequest(ids=[array_id]))
        assert {j.state_code for j in still.jobs} == {"PD"}, "the refused cancel changed nothing"
        done = await bob.CancelJobs(pb.CancelJobsRequest(ids=[array_id]))
        assert done.results[0].ok

    run(test, tmp_path)


def test_whoami_is_the_tokens_user_and_open_to_everyone(tmp_path: Path) -> None:
    async def test(sched: InProcessScheduler) -> None:
        users = pb_grpc.UserServiceStub(sched.user_channel("carol", accounts=("lab",)))
        me = await users.WhoAmI(pb.WhoAmIRequest())
        assert (me.name, me.admin, list(me.accounts)) == ("carol", False, ["lab"])
        code, _ = await refused(users.ListUsers(pb.ListUsersRequest()))
        assert code is DENIED, "the rest of UserService stays admin-only"
        assert (await pb_grpc.UserServiceStub(sched.channel).WhoAmI(pb.WhoAmIRequest())).admin

    run(test, tmp_path)
