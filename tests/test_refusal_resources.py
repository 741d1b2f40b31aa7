"""A request no registered node could ever hold is refused with INVALID_ARGUMENT naming the
first resource none can hold and the largest node's figure for it (not, as before, a line about
GPUs whatever the cause)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from rota.v1 import rota_pb2 as pb
from tests.support.inprocess import InProcessScheduler

GiB = 2**30
# Nodes of the harness: A100 GPUs of 80 GiB, 16 CPUs, 64 GiB; n1 has 2 GPUs and label zone=eu,
# n2 4 GPUs.
CASES = {
    "memory": (
        pb.Resources(gpus=1, memory=512 * GiB),
        1,
        "resources.memory: 512GiB per node, but the largest node, n2, has 64GiB",
    ),
    "cpus": (
        pb.Resources(gpus=1, cpus=64),
        1,
        "resources.cpus: 64 per node, but the largest node, n2, has 16",
    ),
    "gpus": (
        pb.Resources(gpus=8),
        1,
        "resources.gpus: 8 GPU(s) per node, but the largest node, n2, has 4",
    ),
    "gpu type": (
        pb.Resources(gpus=1, gpu_type="H100"),
        1,
        "resources.gpu_type: no node has H100 GPUs (types here: A100)",
    ),
    "gpu memory": (
        pb.Resources(gpus=1, gpu_memory=141 * GiB),
        1,
        "resources.gpu_memory: 141GiB per GPU, but the largest GPU has 80GiB",
    ),
    "labels": (
        pb.Resources(gpus=1),
        1,
        "node_selector: no node has the label zone=us (values of zone here: eu)",
    ),
    "all at once": (
        pb.Resources(gpus=4),
        1,
        "resources: no node has all of 4 GPU(s), labels zone=eu at once (each alone fits some node)",
    ),
    "nodes": (
        pb.Resources(gpus=4),
        2,
        "nodes: 2 nodes with 4 GPU(s) each, but only 1 node(s) have that",
    ),
    "cpu-only nodes": (
        pb.Resources(cpus=8),
        3,
        "nodes: 3 nodes with 0 GPU(s), 8 CPUs each, but only 2 node(s) have that",
    ),
}
SELECTORS = {"labels": {"zone": "us"}, "all at once": {"zone": "eu"}}


@pytest.mark.parametrize("case", list(CASES))
def test_refusal_names_the_resource_no_node_holds(tmp_path: Path, case: str) -> None:
    resources, nodes, message = CASES[case]
    selector = SELECTORS.get(case, {})

    async def main() -> None:
        async with InProcessScheduler(tmp_path) as sched:
            for name, gpus, labels in (("n1", 2, {"zone": "eu"}), ("n2", 4, {})):
                request = pb.AddNodeRequest(name=name, user="root", labels=labels)
                added = await sched.admin.AddNode(request)
                await sched.agent(name, added.token, gpus)
            spec = pb.JobSpec(
                image="img",
                command=["true"],
                resources=resources,
                nodes=nodes,
                node_selector=selector,
            )
            item = pb.SubmitItem(spec=spec, source="big.yaml")
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await sched.jobs.SubmitJobs(pb.SubmitJobsRequest(items=[item], user="ann"))
            assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert info.value.details() == f"big.yaml: {message}"
            listed = await sched.jobs.ListJobs(pb.ListJobsRequest(all_states=True))
            assert not listed.jobs

    asyncio.run(asyncio.wait_for(main(), 60))
