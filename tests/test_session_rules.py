"""Issue 25 item 5: the hard maximum duration of grun sessions (``interactive_max_time``, per
partition where its settings set one) and the idle window per partition. A real gRPC
scheduler in-process; the idle reclamation itself runs against real agents and the fake NVML
library in tests/test_e2e_idle_sessions.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.session_rules import SessionRuleBook
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.support.inprocess import InProcessScheduler
from tests.test_interactive_limits import refusal, session, submit

HOUR = 3600.0
PARTITIONS = {
    "short": {"nodes": ["n1"], "default": True},
    "long": {"nodes": ["n1"], "interactive_max_time": 24 * HOUR},
}


def test_sessions_longer_than_the_maximum_are_refused_naming_the_setting(tmp_path: Path) -> None:
    async def main() -> None:
        async with InProcessScheduler(
            tmp_path, interactive_max_time=2 * HOUR, partitions=PARTITIONS
        ) as sched:
            added = await sched.admin.AddNode(pb.AddNodeRequest(name="n1", user="root"))
            await sched.agent("n1", added.token, gpus=4)
            ann = pb_grpc.JobServiceStub(sched.user_channel("ann"))
            why = await refusal(ann, session(gpus=1, time_limit=3 * HOUR))
            assert "time_limit: 3h exceeds the longest interactive session, 2h" in why
            assert "(interactive_max_time)" in why
            (capped,) = await submit(ann, session(gpus=1, hold=True))  # names no time: gets 2h
            (long,) = await submit(ann, session(time_limit=20 * HOUR, partition="long", hold=True))
            batch = pb.SubmitItem(spec=pb.JobSpec(image="img", command=["true"], time_limit=9e4))
            await submit(ann, batch)  # batch jobs: only max_time_limit
            why = await refusal(ann, session(time_limit=25 * HOUR, partition="long"))
            assert "exceeds the longest interactive session, 1d" in why
            assert "partition 'long' interactive_max_time" in why
            listed = {j.id: j for j in (await ann.ListJobs(pb.ListJobsRequest())).jobs}
            assert listed[capped].time_limit == 2 * HOUR
            assert listed[long].time_limit == 20 * HOUR

    asyncio.run(asyncio.wait_for(main(), 60))


def test_idle_window_comes_from_the_first_partition_that_sets_it_then_the_qos() -> None:
    config = SchedulerConfig(
        interactive_idle_after=2 * HOUR,
        interactive_idle_warning=900,
        interactive_qos={"long": {"interactive_idle_after": 8 * HOUR, "interactive_max_time": 0}},
        partitions={
            "debug": {"nodes": ["a"], "default": True, "interactive_idle_after": 1800},
            "lab": {"nodes": ["b"], "interactive_idle_warning": 60},
            "plain": {"nodes": ["c"]},
        },
    )
    book = SessionRuleBook(config, config.partitions.get)
    debug = book.rules("debug")
    assert (debug.idle_after, debug.idle_warning) == (1800, 900)
    assert debug.idle_after_from == "partition 'debug' interactive_idle_after"
    lab = book.rules("plain,lab")
    assert (lab.idle_after, lab.idle_after_from, lab.idle_warning) == (
        2 * HOUR,
        "interactive_idle_after",
        60,
    )
    assert book.rules("").max_time == 12 * HOUR, "a lab's default: 12 hours"
    long = book.rules("plain", "long")
    assert (long.idle_after, long.idle_after_from) == (
        8 * HOUR,
        "interactive_qos 'long' interactive_idle_after",
    )
    assert long.max_time == 0, "no maximum for this QoS"
    assert book.rules("debug", "long").idle_after == 1800, "the partition's comes first"
