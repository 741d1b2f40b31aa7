"""One job object (``rota.jobview``): ``gqueue --json`` (from the gRPC message the CLI receives)
and the web API (from the scheduler's record) show the same keys and values for the same job,
including the cases where they used to disagree: ``exit_code`` of a job still running (a gang
member exited) or never started, ``reservation`` of a job without one, and the warning of a
running job."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rota.cli.client import state_of
from rota.cli.gacct import job_row
from rota.cli.render import job_json as cli_job_json
from rota.efficiency import IDLE_BELOW
from rota.jobspec import JobSpec
from rota.scheduler.api.accounting import finished_to_pb
from rota.scheduler.api.convert import job_to_pb
from rota.scheduler.cluster.accounting import FinishedJob, JobUsage
from rota.scheduler.cluster.model import JobRecord, NodeAlloc
from rota.scheduler.web.views import finished_json
from rota.scheduler.web.views import job_json as web_job_json
from rota.states import JobState
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.tokens import aio_channel
from tests.test_web_api import Browserless, registered, run, user

BASE = JobRecord(
    id=7,
    name="train",
    user="ann",
    account="vision",
    spec=JobSpec(image="img", command=("true",), gpus=2, nodes=2),
    state=JobState.RUNNING,
    submit_time=1_780_000_000.0,
    time_limit=3600.0,
    attempt=1,
    start_time=1_780_000_060.0,
    allocation=[NodeAlloc("n1", (0, 1)), NodeAlloc("n2", (2, 3))],
)


def as_cli_sees_it(job: JobRecord) -> dict[str, Any]:
    """``gqueue --json``'s object: the record sent as the gRPC message, decoded by the CLI."""
    received = pb.Job.FromString(job_to_pb(job).SerializeToString())
    return cli_job_json(received, state_of(received))


CASES: dict[str, tuple[JobRecord, dict[str, Any]]] = {
    "gang member exited, job still running": (
        replace(BASE, exit_code=1),
        {"exit_code": None, "expected_end": "2026-05-28T21:27:40Z"},
    ),
    "failed": (
        replace(BASE, state=JobState.FAILED, exit_code=3, end_time=1_780_000_100.0),
        {"exit_code": 3, "end_time": "2026-05-28T20:28:20Z", "expected_end": None},
    ),
    "cancelled before it started": (
        replace(BASE, state=JobState.CANCELLED, start_time=None, allocation=[], end_time=1e9),
        {"exit_code": None, "nodes": [], "num_nodes": 2},
    ),
    "completed with 0": (
        replace(BASE, state=JobState.COMPLETED, exit_code=0, end_time=1_780_000_100.0),
        {"exit_code": 0},
    ),
    "no reservation": (BASE, {"reservation": None}),
    "plain spec: squeue's facts are null or 0": (
        BASE,
        {"job_id": 7, "cpus": 0, "memory": 0, "gpu_type": None, "qos": None, "workdir": None},
    ),
    "squeue's facts from the spec": (
        replace(
            BASE,
            spec=replace(
                BASE.spec,
                cpus=8.0,
                memory=32 * 2**30,
                gpu_type="A100",
                node_selector={"zone": "eu"},
                qos="high",
                dependency="afterok:3",
                workdir="/data",
            ),
        ),
        {
            "cpus": 8.0,
            "memory": 32 * 2**30,
            "gpu_type": "A100",
            "node_selector": {"zone": "eu"},
            "qos": "high",
            "dependency": "afterok:3",
            "workdir": "/data",
            "command": ["true"],
        },
    ),
    "in a reservation": (
        replace(BASE, spec=replace(BASE.spec, reservation="vision-week")),
        {"reservation": "vision-week"},
    ),
    "running with a warning": (
        replace(BASE, warning="GPU 1 idle for 30m"),
        {"reason": "GPU 1 idle for 30m", "warning": "GPU 1 idle for 30m"},
    ),
    "pending with a reason and an old warning": (
        replace(
            BASE,
            state=JobState.PENDING,
            start_time=None,
            allocation=[],
            reason="Priority",
            warning="w",
            estimated_start=1_780_003_600.0,
        ),
        {"reason": "Priority", "estimated_start": "2026-05-28T21:26:40Z", "gpu_ids": {}},
    ),
    "held by its user": (
        replace(
            BASE,
            state=JobState.PENDING,
            start_time=None,
            allocation=[],
            held="user",
            reason="JobHeldUser",
        ),
        {"held": "user", "reason": "JobHeldUser"},
    ),
    "array task": (
        replace(BASE, id=12, array_job_id=10, array_task_id=2),
        {"id": "10_2", "gpu_ids": {"n1": [0, 1], "n2": [2, 3]}},
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_gqueue_json_and_the_web_api_agree(case: str) -> None:
    job, expected = CASES[case]
    cli, web = as_cli_sees_it(job), web_job_json(job)
    assert cli == web
    assert {key: web[key] for key in expected} == expected


GiB = 2**30
FINISHED = {
    "cancelled before it ran": (
        replace(BASE, state=JobState.CANCELLED, start_time=None, allocation=[]),
        JobUsage(7),
        None,
    ),
    "ran and failed": (
        replace(BASE, state=JobState.FAILED, exit_code=3),
        JobUsage(7, util_sum=160.0, samples=2, memory_peak=GiB, memory_total=80 * GiB),
        3,
    ),
    "ran and completed": (
        replace(BASE, state=JobState.COMPLETED, exit_code=0),
        JobUsage(7, util_sum=160.0, samples=2, memory_peak=GiB, memory_total=80 * GiB),
        0,
    ),
}


@pytest.mark.parametrize("case", FINISHED)
def test_gacct_json_and_the_web_api_agree_on_a_finished_job(case: str) -> None:
    """One finished job as ``gacct --json`` renders the ``FinishedJob`` message it receives and
    as the web API renders the record: the same ``exit_code`` (null when it never ran, not 0),
    and the same values under every key both show (the GPU memory figures aside: gacct says
    null without samples, the web 0)."""
    job, usage, exit_code = FINISHED[case]
    row = FinishedJob(replace(job, end_time=1_780_000_960.0), usage)
    received = pb.FinishedJob.FromString(finished_to_pb(row).SerializeToString())
    cli, web = job_row(received), finished_json(row, IDLE_BELOW)
    assert cli["exit_code"] == web["exit_code"] == exit_code
    shared = (set(cli) & set(web)) - {"gpu_memory_peak", "gpu_memory_total"}
    assert {k: cli[k] for k in shared} == {k: web[k] for k in shared}


def test_the_object_has_the_documented_keys() -> None:
    assert list(web_job_json(BASE)) == [
        "id",
        "name",
        "user",
        "account",
        "state",
        "state_code",
        "reason",
        "exit_code",
        "attempt",
        "nodes",
        "gpus",
        "gpu_ids",
        "submit_time",
        "start_time",
        "end_time",
        "time_limit",
        "num_nodes",
        "estimated_start",
        "expected_end",
        "reservation",
        "partition",
        "held",
        "warning",
        "job_id",
        "cpus",
        "memory",
        "gpu_type",
        "node_selector",
        "qos",
        "dependency",
        "workdir",
        "command",
        "interactive",
        "constraint",
    ]


def test_a_live_scheduler_answers_both_apis_with_one_object(tmp_path: Path) -> None:
    """Jobs submitted held to an in-process scheduler (one then cancelled while pending): the
    web API's ``/api/v1/jobs?state=all`` and ``ListJobs`` as ``gqueue --json`` renders it."""

    async def test(sched: Any, client: Callable[[], Browserless]) -> None:
        await registered(sched, "n1", 2)
        ann = await user(sched, "ann")
        gpus = pb.Resources(gpus=1)
        spec = pb.JobSpec(image="img", command=["true"], resources=gpus, hold=True)
        held = pb.JobSpec(image="img", command=["true"], hold=True, name="held")
        items = [
            pb.SubmitItem(spec=spec, client_request_id="a"),
            pb.SubmitItem(spec=held, client_request_id="b"),
        ]
        async with aio_channel(sched.address, ann) as channel:
            jobs = pb_grpc.JobServiceStub(channel)
            await jobs.SubmitJobs(pb.SubmitJobsRequest(items=items))
            await jobs.CancelJobs(pb.CancelJobsRequest(ids=["1"]))
            await sched.fresh_pass()  # the held job's reason is set by a pass
            listed = await jobs.ListJobs(pb.ListJobsRequest(all_states=True))
            web = client()
            await web.login(ann)
            shown = (await web.call("GET", "/api/v1/jobs?state=all")).json()["jobs"]
            again = await jobs.ListJobs(pb.ListJobsRequest(all_states=True))
        assert listed == again, "the jobs changed while the test read them"
        cli = [cli_job_json(j, state_of(j)) for j in listed.jobs]
        assert sorted(cli, key=lambda j: j["id"]) == sorted(shown, key=lambda j: j["id"])
        by_id = {j["id"]: j for j in shown}
        assert (by_id["1"]["state"], by_id["1"]["exit_code"]) == ("CANCELLED", None)
        assert (by_id["2"]["held"], by_id["2"]["reservation"]) == ("user", None)

    run(test, tmp_path)


def test_the_cli_module_stays_light() -> None:
    """``rota.jobview`` (imported by every ``gqueue --json``) pulls in no scheduler, gRPC or
    generated code."""
    code = (
        "import sys, rota.jobview, rota.cli.render; "
        "bad = [m for m in sys.modules if m.startswith(('rota.scheduler', 'grpc', 'rota.v1', "
        "'google', 'sqlalchemy'))]; print(bad)"
    )

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("state", "placed", "shown"),
    [
        (JobState.PENDING, "", "a,b"),  # waiting: the partitions it may run in
        (JobState.PENDING, "b", "a,b"),  # requeued: waiting again in either
        (JobState.RUNNING, "b", "b"),  # placed: the one it runs in
        (JobState.COMPLETED, "b", "b"),
    ],
)
def test_partition_is_where_it_runs_once_placed_else_the_list(
    state: JobState, placed: str, shown: str
) -> None:
    job = replace(BASE, state=state, partition=placed, spec=replace(BASE.spec, partition="a,b"))
    assert as_cli_sees_it(job)["partition"] == web_job_json(job)["partition"] == shown
