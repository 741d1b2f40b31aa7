"""``gqueue --format``: squeue's letters, spelled as squeue spells them (times in local time,
``D-HH:MM:SS``/``UNLIMITED`` limits, ``4G`` memory, ``N/A`` and ``(null)``), ``%-N``/``%.N``
widths, and ``-h`` for no header, rendered from the job messages the CLI receives."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rota.cli.client import state_of
from rota.cli.gqueue_format import formatted, parse_format
from rota.cli.render import job_json
from rota.jobspec import JobSpec
from rota.scheduler.api.convert import job_to_pb
from rota.scheduler.cluster.model import JobRecord, NodeAlloc
from rota.states import JobState
from rota.v1 import rota_pb2 as pb
from tests.support.inprocess import InProcessScheduler

GiB = 2**30
SUBMIT = 1_700_000_000.0  # 2023-11-14T22:13:20 UTC
NOW = SUBMIT + 3 * 3600
RUNNING = JobRecord(
    id=41,
    name="train",
    user="ann",
    account="vision",
    spec=JobSpec(
        image="img",
        command=("python", "train.py"),
        gpus=2,
        gpu_type="A100",
        nodes=2,
        cpus=8.0,
        memory=32 * GiB,
        node_selector={"zone": "eu", "ib": "yes"},
        constraint="v100|a100",
        qos="high",
        dependency="afterok:40",
        workdir="/data/run",
    ),
    state=JobState.RUNNING,
    submit_time=SUBMIT,
    time_limit=2 * 86400 + 3600,
    attempt=1,
    start_time=SUBMIT + 3600,  # 2:00:00 before NOW
    allocation=[NodeAlloc("gpu01", (0, 1)), NodeAlloc("gpu02", (0, 1))],
)
PENDING = JobRecord(
    id=57,
    name="sweep",
    user="bob",
    account="nlp",
    spec=JobSpec(image="img", command=("true",), array="0-9"),
    state=JobState.PENDING,
    submit_time=SUBMIT,
    time_limit=0.0,
    reason="Priority",
    array_job_id=50,
    array_task_id=7,
)


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is UTC here, so that squeue's local times are known."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def received(job: JobRecord) -> dict[str, Any]:
    msg = pb.Job.FromString(job_to_pb(job).SerializeToString())
    return job_json(msg, state_of(msg))


def row(fmt: str, job: JobRecord) -> str:
    return formatted(parse_format(fmt), [received(job)], NOW)[1]


@pytest.mark.parametrize(
    ("letters", "running", "pending"),
    [
        ("%i %A %F %K", "41 41 41 N/A", "50_7 57 50 7"),
        ("%P %a %q", "default vision high", "default nlp normal"),
        ("%l|%L|%M", "2-01:00:00|1-23:00:00|2:00:00", "UNLIMITED|UNLIMITED|0:00"),
        ("%D %c %C %m", "2 8 16 32G", "1 N/A N/A 0"),
        ("%b", "gres/gpu:a100:2", "N/A"),
        ("%f|%E", "ib=yes&zone=eu&(v100|a100)|afterok:40", "(null)|(null)"),
        ("%V", "2023-11-14T22:13:20", "2023-11-14T22:13:20"),
        ("%S|%e", "2023-11-14T23:13:20|2023-11-17T00:13:20", "N/A|N/A"),
        ("%N|%r|%R", "gpu01,gpu02|None|gpu01,gpu02", "|Priority|(Priority)"),
        ("%Z|%o", "/data/run|python train.py", "N/A|true"),
        ("%t %T", "R RUNNING", "PD PENDING"),
    ],
)
def test_letters_spelled_as_squeue(letters: str, running: str, pending: str) -> None:
    assert row(letters, RUNNING) == running
    assert row(letters, PENDING) == pending


def test_widths_pad_cut_and_align() -> None:
    lines = formatted(parse_format("%.6i|%-8j|%4P|%.10l|%3m"), [received(RUNNING)], NOW)
    assert lines == [
        " JOBID|NAME    |PART|TIME_LIMIT|MIN",
        "    41|train   |defa|2-01:00:00|32G",
    ]


def test_memory_spelled_in_mebibytes_unless_whole() -> None:
    sizes = {512 * 2**20: "512M", 1536 * 2**20: "1536M", 4 * GiB: "4G", 2 * 2**40: "2T"}
    for size, text in sizes.items():
        assert row("%m", replace(RUNNING, spec=replace(RUNNING.spec, memory=size))) == text


def test_gqueue_h_prints_squeue_shaped_rows(tmp_path: Path) -> None:
    async def main() -> None:
        async with InProcessScheduler(tmp_path) as sched:
            added = await sched.admin.AddNode(pb.AddNodeRequest(name="n1", user="root"))
            await sched.agent("n1", added.token, 2)
            spec = pb.JobSpec(
                image="img",
                command=["true"],
                resources=pb.Resources(gpus=2, cpus=4, memory=8 * GiB),
                time_limit=90 * 60,
            )
            request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)], user="ann")
            reply = await sched.jobs.SubmitJobs(request)
            (job_id,) = reply.jobs[0].job_ids
            env = dict(os.environ, ROTA_SCHEDULER=sched.address, ROTA_TOKEN=sched.admin_token)
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "rota.cli.gqueue",
                "-h",
                "-t",
                "all",
                "-o",
                "%i %P %C %D %l %L %m %V",
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode == 0, err.decode()
            (line,) = out.decode().splitlines()
            fields = line.split()
            shown = [fields[i] for i in (0, 1, 2, 3, 4, 6)]
            assert shown == [job_id, "default", "4", "1", "1:30:00", "8G"], line
            assert fields[5] in ("1:30:00", "1:29:59", "1:29:58"), line  # left, if it started
            assert len(fields[7]) == 19 and fields[7][10] == "T" and "Z" not in fields[7], line

    asyncio.run(main())


def test_priority_letters_show_what_explain_reports_for_pending_jobs(tmp_path: Path) -> None:
    async def main() -> None:
        async with InProcessScheduler(tmp_path) as sched:
            added = await sched.admin.AddNode(pb.AddNodeRequest(name="n1", user="root"))
            await sched.agent("n1", added.token, 1)
            spec = pb.JobSpec(image="img", command=["true"], resources=pb.Resources(gpus=1))
            ids = []
            for _ in range(2):  # the second waits for the first's GPU
                request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)], user="ann")
                ids += (await sched.jobs.SubmitJobs(request)).jobs[0].job_ids
            explained = await sched.jobs.ExplainJob(pb.ExplainJobRequest(id=ids[1]))
            env = dict(os.environ, ROTA_SCHEDULER=sched.address, ROTA_TOKEN=sched.admin_token)
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                *("-m", "rota.cli.gqueue", "-o", "%i %Q %p"),
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode == 0, err.decode()
            head, first, second = (line.split() for line in out.decode().splitlines())
            assert head == ["JOBID", "PRIORITY", "PRIORITY"]
            assert first == [ids[0], "N/A", "N/A"]  # running: no priority kept
            whole = round(explained.priority)  # first-fit here: no priority of its own, 0
            assert second == [ids[1], str(whole), f"{whole / 0xFFFFFFFF:16.14f}"]

    asyncio.run(main())
