"""``nvidia`` GPU mode: the container carries a DeviceRequest naming exactly the allocated UUIDs.

This engine has no NVIDIA runtime, so starting such a container fails with "could not select
device driver": the job must end FAILED with that reason and no container left. The request
itself is inspected through the engine by creating (not starting) a container from the
runtime's own create arguments.
"""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from rota.agent.runtime.engine_args import create_args
from rota.agent.runtime.policy import ContainerPolicy
from rota.jobspec import JobSpec
from rota.messages import LaunchOrder
from tests.cluster import Cluster, wait_for
from tests.gpu_e2e import SLEEPER, GpuCluster, gpus


def test_device_request_names_exactly_the_allocated_uuids(test_image: str) -> None:
    uuids = ("GPU-00000001-fake-4e6f-8a1b-000000000001", "GPU-00000003-fake-4e6f-8a1b-000000000003")
    order = LaunchOrder(
        job_id=424242,
        attempt=1,
        display_id="424242",
        spec=JobSpec(image=test_image, command=("true",)),
        gpu_indices=(1, 3),
        gpu_uuids=uuids,
        env={},
        time_limit=0.0,
    )
    client = docker.from_env()
    args = create_args(order, (), "nv-unit", ContainerPolicy(), gpu_mode="nvidia", network="")
    container = client.containers.create(**args)
    try:
        requests = client.api.inspect_container(container.id)["HostConfig"]["DeviceRequests"]
        assert len(requests) == 1
        (req,) = requests
        assert req["Driver"] == "nvidia"
        assert req["DeviceIDs"] == list(uuids)
        assert req["Capabilities"] == [["gpu"]]
        assert not req.get("Count")
        env = client.api.inspect_container(container.id)["Config"]["Env"] or []
        assert not any(e.startswith("CUDA_VISIBLE_DEVICES=") for e in env)
    finally:
        container.remove(force=True)
        client.close()


@pytest.fixture
def gc(cluster: Cluster, fake_nvml_lib: Path) -> GpuCluster:
    return GpuCluster(cluster, fake_nvml_lib)


def test_nvidia_mode_job_fails_with_the_engine_reason_and_leaves_no_container(
    gc: GpuCluster,
) -> None:
    gc.start(gpus(2), "--gpu-mode", "nvidia")
    assert gc.node()["inventory"]["gpu_mode"] == "nvidia"
    job_id = gc.c.submit(SLEEPER.replace("gpus: 1", "gpus: 2"))
    job = gc.c.wait_state(job_id, "FAILED", timeout=60)
    assert "could not select device driver" in job["reason"]
    assert job["gpu_ids"][gc.node_name] == [0, 1]
    wait_for(lambda: not gc.c.containers(), 20, what="no container left")
    uuids = ",".join(g["uuid"] for g in gc.gpus)
    assert f"job {job_id} attempt 1: GPUs {uuids} passed as an nvidia DeviceRequest" in gc.c.log(
        "agent-n1"
    )
    assert gc.c.log("agent-n1").count("could not select device driver") >= 1
