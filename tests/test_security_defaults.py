"""Issue 22, defaults on: what a cluster set up with no limits of its own refuses, each test
written as the attack (docs/security.md, "Defaults on"); and a revoked user's jobs, and the
CLI's token over plaintext."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rota.jobspec import JobSpec
from rota.messages import LaunchOrder
from rota.scheduler.cluster.users import Principal
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.errors import Conflict, UserError
from rota.scheduler.core.jobs import SubmitItem
from rota.scheduler.core.reservation_gpus import ReservationRequest
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.core import Harness
from tests.support.inprocess import AgentStream, InProcessScheduler
from tests.support.tokens import aio_channel

HOUR = 3600.0
DAY = 24 * HOUR
ANN = Principal("ann")


def booked(h: Harness, gpus: int, hours: float, ahead: float = 0.0, name: str = "mine") -> None:
    at = h.clock.now + ahead
    request = ReservationRequest(name, at, at + hours * HOUR, gpus=gpus, users=("ann",))
    h.s.reservations.create(request, ANN)


def test_a_users_ten_year_booking_of_three_gpus_is_refused_by_default(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.connect("n1", gpus=12)
    with pytest.raises(Conflict, match="cap max_hours: a booking may last at most 168 h"):
        booked(h, gpus=3, hours=10 * 365 * 24)
    with pytest.raises(Conflict, match="cap max_gpus: a booking may hold at most 8 GPUs"):
        booked(h, gpus=9, hours=2)
    with pytest.raises(Conflict, match="cap max_days_ahead: a booking may start at most 90 days"):
        booked(h, gpus=1, hours=2, ahead=91 * DAY)
    assert h.s.reservations.live == {}  # nothing was booked
    booked(h, gpus=3, hours=7 * 24, ahead=89 * DAY)  # within every cap
    admin = Principal("root", admin=True)
    at = h.clock.now
    long = ReservationRequest("maint", at, at + 365 * DAY, gpus=9, users=("ann",))
    h.s.reservations.create(long, admin)  # admins are not capped


def test_a_user_cannot_hold_a_node_forever_with_recurring_or_stacked_bookings(
    tmp_path: Path,
) -> None:
    """A WEEKLY booking of a week would hold its GPUs every hour of every week: its repeats
    count against ``max_hours_per_week`` (168 h of windows per user in any 7 days, on by
    default), so it fits only alone. Stacking 8-GPU week-long bookings over a node is stopped
    by the same cap."""
    h = Harness(tmp_path)
    h.connect("n1", gpus=16)
    at = h.clock.now + HOUR
    forever = ReservationRequest(
        "forever", at, at + 7 * DAY, gpus=8, users=("ann",), flags=("WEEKLY",)
    )
    booked(h, gpus=8, hours=7 * 24, ahead=HOUR)
    with pytest.raises(Conflict, match="cap max_hours_per_week"):
        h.s.reservations.create(forever, ANN)
    with pytest.raises(Conflict, match="cap max_hours_per_week"):
        booked(h, gpus=8, hours=7 * 24, ahead=HOUR, name="more")  # the node's other 8 GPUs
    assert len(h.s.reservations.live) == 1
    h.connect("n2", gpus=8)
    weekly = dataclasses.replace(forever, gpus=0, nodes=("n2",))
    h.s.reservations.create(weekly, Principal("root", admin=True))  # admins are not capped


def test_the_10001st_pending_task_of_one_user_is_refused_by_default(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.connect("n1", gpus=1)
    array = JobSpec(image="img", command=("true",), gpus=1, array="0-9999", hold=True)
    h.s.jobs.submit([SubmitItem(array)], "ann")  # 10,000 tasks: exactly the limit
    one = SubmitItem(JobSpec(image="img", command=("true",), gpus=1), source="one.yaml")
    with pytest.raises(UserError, match=r"one.yaml: user ann would have 10001 pending jobs; the "):
        h.s.jobs.submit([one], "ann")
    with pytest.raises(UserError, match=r"limits.max_pending_per_user"):
        h.s.jobs.submit([one], "ann")
    assert len(h.s.model.jobs) == 10_000  # nothing of the refused submission was stored
    h.s.jobs.submit([one], "bob")  # another user is not affected


def test_a_job_without_a_memory_limit_gets_the_default_one(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    assert SchedulerConfig().default_memory == 16 * 2**30
    h.connect("n1", gpus=2)
    free = h.submit(gpus=1)
    sized = h.submit(gpus=1, memory=2 * 2**30)
    orders = h.schedule()
    launched = {o.display_id: o.spec.memory for _, o in orders if isinstance(o, LaunchOrder)}
    assert launched == {free: 16 * 2**30, sized: 2 * 2**30}
    assert h.s.jobs.get(free)[0].spec.memory == 0  # a limit, not a request the policy counts


# ------------------------------------------------------------------ a revoked user's jobs


def _states(reply: pb.ListJobsResponse) -> dict[str, tuple[int, str]]:
    return {j.id: (j.state, j.reason) for j in reply.jobs}


def test_a_revoked_users_queued_jobs_are_held_and_never_launched(tmp_path: Path) -> None:
    async def main() -> None:
        async with InProcessScheduler(tmp_path) as sched:
            added = await sched.admin.AddNode(pb.AddNodeRequest(name="n1", user="root"))
            agent = await sched.agent("n1", added.token, 1)
            users = pb_grpc.UserServiceStub(sched.channel)
            ann = (await users.AddUser(pb.AddUserRequest(name="ann", uid=-1, gid=-1))).token
            spec = pb.JobSpec(image="img", command=["true"], resources=pb.Resources(gpus=1))
            blocker = pb.SubmitItem(spec=spec)
            submitted = await sched.jobs.SubmitJobs(pb.SubmitJobsRequest(items=[blocker]))
            (block_id,) = submitted.jobs[0].job_ids  # the admin's job holds the only GPU
            async with aio_channel(sched.address, ann) as channel:
                items = [pb.SubmitItem(spec=spec) for _ in range(2)]
                mine = await pb_grpc.JobServiceStub(channel).SubmitJobs(
                    pb.SubmitJobsRequest(items=items)
                )
            queued = [r.job_ids[0] for r in mine.jobs]
            await users.RevokeUser(pb.UserNameRequest(name="ann"))
            listing = pb.ListJobsRequest(ids=queued)
            shown = _states(await sched.jobs.ListJobs(listing))
            assert shown == {i: (pb.PENDING, "UserRevoked") for i in queued}
            # the GPU comes free: passes run, and ann's jobs still never start
            await _launched(agent, block_id)
            ended = pb.AgentJobEvent(job_id=int(block_id), attempt=1, kind=pb.EXITED)
            agent.send.put_nowait(pb.AgentMessage(job_event=ended))
            await agent.handled()
            await sched.intake_idle()
            assert (await sched.jobs.GetJob(pb.GetJobRequest(id=block_id))).state == pb.COMPLETED
            await sched.fresh_pass()  # a pass after the GPU came free
            await agent.handled()  # and any order it made has arrived
            launched = [m.launch.display_id for m in agent.received if m.HasField("launch")]
            assert launched == [block_id]
            assert _states(await sched.jobs.ListJobs(listing)) == shown
            released = await sched.jobs.ControlJobs(
                pb.ControlJobsRequest(action=pb.RELEASE, ids=queued[:1])
            )
            assert not released.results[0].ok
            assert "ann, who is revoked" in released.results[0].message
            # re-enabled: the jobs stay held until ann (or an admin) releases them
            renewed = (await users.NewToken(pb.UserNameRequest(name="ann"))).token
            assert _states(await sched.jobs.ListJobs(listing)) == shown
            async with aio_channel(sched.address, renewed) as channel:
                again = await pb_grpc.JobServiceStub(channel).ControlJobs(
                    pb.ControlJobsRequest(action=pb.RELEASE, ids=queued[:1])
                )
            assert again.results[0].ok
            await _launched(agent, queued[0])

    asyncio.run(main())


async def _launched(agent: AgentStream, display_id: str) -> None:
    """Wait until ``agent`` was ordered to launch job ``display_id``."""

    def launched(received: list[pb.SchedulerMessage]) -> bool:
        return display_id in [m.launch.display_id for m in received if m.HasField("launch")]

    await agent.wait_for(launched)


def test_jobs_planned_before_a_revocation_are_held_not_launched(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.s.users.add("ann", admin=False)
    h.connect("n1", gpus=2)
    job = h.submit(gpus=1)
    snap = h.s.planner.snapshot()
    plan = h.s.policy.decide(snap)  # the pass decided before the revocation was applied
    h.s.users.revoke("ann")  # (a user revoked while the scheduler was down is the same)
    orders = h.s.planner.apply(plan)
    assert [o for _, o in orders if isinstance(o, LaunchOrder)] == []
    shown = h.s.jobs.get(job)[0]
    assert (shown.held, shown.reason) == ("revoked", "UserRevoked")


# ------------------------------------------------------------------ the CLI's token


def _gqueue(tmp_path: Path, address: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "ROTA_TOKEN": "secret-token",
        "XDG_CONFIG_HOME": str(tmp_path),
        "ROTA_CA": "",
        # should a refusal ever be missing, gRPC goes to this dead loopback proxy: nothing
        # leaves the machine, and no name is resolved
        "grpc_proxy": "http://127.0.0.1:9",
        "no_grpc_proxy": "",
        **env,
    }
    code = "import sys; from rota.cli.gqueue import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, "--scheduler", address],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_cli_refuses_to_send_its_token_in_plaintext_off_this_machine(tmp_path: Path) -> None:
    # 192.0.2.1 is TEST-NET-1: nothing is dialled, the refusal comes before any connection
    result = _gqueue(tmp_path, "192.0.2.1:9717")
    assert result.returncode == 2
    assert "refusing to send your rota token without TLS to 192.0.2.1:9717" in result.stderr
    assert "ROTA_INSECURE=1" in result.stderr and "--ca" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    named = _gqueue(tmp_path, "sched.lab.example:9717")
    assert named.returncode == 2 and "without TLS" in named.stderr


def test_loopback_plaintext_and_the_explicit_opt_out_are_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rota.cli.client import Client
    from rota.cli.target import Target

    monkeypatch.setenv("ROTA_TOKEN", "secret-token")
    for address in ("127.0.0.1:9717", "localhost:9717", "[::1]:9717", "127.0.0.2:1"):
        Client(Target(address, "test")).close()  # a channel is made, nothing dialled yet
    assert capsys.readouterr().err == ""
    Client(Target("192.0.2.1:9717", "test", insecure=True)).close()
    assert "warning: sending your rota token without TLS" in capsys.readouterr().err
    result = _gqueue(tmp_path, "127.0.0.1:1")  # loopback: tried (and unreachable), not refused
    assert result.returncode == 1 and "without TLS" not in result.stderr
