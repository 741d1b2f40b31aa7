"""One wire model, two conversion sides: what the agent sends reaches the scheduler unchanged,
and every order the scheduler sends reaches the agent unchanged (through serialized bytes)."""

from __future__ import annotations

import pytest

from rota.agent.link.convert import message_to_pb, order_from_pb
from rota.gpus import GpuInfo, GpuLink
from rota.jobspec import JobSpec, Mount
from rota.messages import (
    AgentEvent,
    AgentMessage,
    AgentOrder,
    EventAck,
    EventKind,
    GpuProcess,
    GpuTelemetry,
    Heartbeat,
    Hello,
    Inventory,
    KillOrder,
    LaunchOrder,
    LogData,
    LogRequest,
    Pong,
    RunningAttempt,
    Welcome,
)
from rota.scheduler.api import convert
from rota.v1 import rota_pb2 as pb

ATTEMPTS = (RunningAttempt(7, 2, "c0ffee", True), RunningAttempt(8, 1, "beef", False))
INVENTORY = Inventory(
    gpus=(GpuInfo(0, "GPU-a", "H100", 80 * 2**30, "0000:01:00.0", "9.0"),),
    links=(GpuLink(0, 1, "NVLINK", True),),
    driver_version="550.54",
    cuda_version="12.4",
    note="",
    cpus=64.0,
    memory=2**40,
    labels={"rack": "r1"},
    gpu_mode="nvidia",
)
SPEC = JobSpec(
    image="train:1",
    command=("python", "train.py"),
    name="train",
    gpus=2,
    cpus=8.0,
    memory=64 * 2**30,
    env={"A": "1"},
    mounts=(Mount("/data", "/data", True),),
    workdir="/w",
    pull="never",
)


def _to_scheduler(msg: AgentMessage) -> AgentMessage:
    wire = pb.AgentMessage.FromString(message_to_pb(msg).SerializeToString())
    kind = wire.WhichOneof("msg")
    if kind == "hello":
        return convert.hello_from_pb(wire.hello)
    if kind == "heartbeat":
        return convert.heartbeat_from_pb(wire.heartbeat)
    if kind == "job_event":
        return convert.event_from_pb(wire.job_event)
    return convert.log_data_from_pb(wire.log_data)


@pytest.mark.parametrize(
    "msg",
    [
        Hello("n1", "tok", INVENTORY, ATTEMPTS, "10.0.0.5", "0.1.0"),
        Heartbeat(
            gpus=(
                GpuTelemetry(
                    0, "GPU-a", 97.0, 2**30, 61.0, 300.5, "", (GpuProcess(42, 2**20, "7"),)
                ),
                GpuTelemetry(1, "GPU-b", error="GPU is lost"),
            ),
            attempts=ATTEMPTS,
            engine_healthy=False,
            engine_error="engine down",
            time=1700000000.5,
        ),
        *(AgentEvent(7, 2, kind, 137, True, "why", 1700000001.0, True) for kind in EventKind),
        LogData(5, b"out\n", True, "gone"),
    ],
)
def test_agent_messages_reach_the_scheduler_unchanged(msg: AgentMessage) -> None:
    assert _to_scheduler(msg) == msg


@pytest.mark.parametrize(
    "order",
    [
        LaunchOrder(
            7, 2, "7", SPEC, (0, 1), ("GPU-a", "GPU-b"), {"ROTA_JOB_ID": "7"}, 3600.0, True
        ),
        KillOrder(7, 2, "cancelled by alice", 10.0),
        EventAck(7, 2),
        Welcome(2.0, ATTEMPTS, 300.0),
        LogRequest(5, 7, 2, True, False),
        Pong(1700000002.0),
    ],
)
def test_orders_reach_the_agent_unchanged(order: AgentOrder) -> None:
    wire = pb.SchedulerMessage.FromString(convert.order_to_pb(order).SerializeToString())
    assert order_from_pb(wire) == order


def test_event_kinds_are_the_protocol_kinds() -> None:
    assert {k.value for k in EventKind} == {
        v.name for v in pb.JobEventKind.DESCRIPTOR.values if v.number
    }
    assert [k for k in EventKind if not k.final] == [EventKind.STARTED]


def test_the_container_sees_the_job_env_under_the_scheduler_variables() -> None:
    spec = JobSpec(image="i", command=("true",), env={"A": "job", "ROTA_JOB_ID": "forged"})
    order = LaunchOrder(7, 1, "7", spec, (), (), {"ROTA_JOB_ID": "7"}, 0.0)
    assert order.container_env == {"A": "job", "ROTA_JOB_ID": "7"}
