"""Helpers for the GPU end-to-end tests: a scheduler with fast GPU rules and agents on the fake
NVML library (real pynvml in a real agent subprocess, real Docker, the real CLI)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for
from tests.nvml_fake import fake_gpu, fake_nvml_env, write_fake_config
from tests.support.tokens import channel as token_channel

HEARTBEAT = 0.5
FAST_RULES = {
    "heartbeat_interval": HEARTBEAT,
    "tick_interval": 0.5,
    "gpu_max_temperature": 85,
    "gpu_hot_for": 1.0,
    "gpu_dirty_memory": "512Mi",
    "gpu_dirty_grace": 1.0,
    "idle_gpu_warn_after": 0,
}

SLEEPER = f"""
name: sleeper
image: {TEST_IMAGE}
command: ["sleep", "600"]
resources: {{gpus: 1}}
"""


class GpuCluster:
    """A ``Cluster`` whose agent ``n1`` sees the fake GPUs written to ``config``."""

    def __init__(self, cluster: Cluster, lib_dir: Path) -> None:
        self.c = cluster
        self.lib_dir = lib_dir
        self.config = cluster.root / "fake-nvml.json"
        self.gpus: list[dict[str, Any]] = []

    @property
    def node_name(self) -> str:
        return self.c.node_name("n1")

    def start(
        self,
        gpus: list[dict[str, Any]],
        *agent_args: str,
        topology: list[list[int]] | None = None,
        p2p: list[list[int]] | None = None,
        **rules: Any,
    ) -> GpuCluster:
        """Scheduler with ``FAST_RULES`` (``rules`` override them), then agent n1 on ``gpus``."""
        settings = {"http_listen": f"127.0.0.1:{free_port()}", **FAST_RULES, **rules}
        path = self.c.root / "scheduler.yaml"
        path.write_text(yaml.safe_dump({"scheduler": settings}))
        self.c.scheduler_args = ["--open-registration", "--config", str(path)]
        if "http_listen" in settings:  # else start_scheduler's free port would override it
            self.c.scheduler_args += ["--http-listen", str(settings["http_listen"])]
        self.c.start_scheduler()
        self.write(gpus, topology=topology, p2p=p2p)
        env = fake_nvml_env(self.lib_dir, self.config, self.c.env)
        self.c.start_agent("n1", None, *agent_args, env=env)
        return self

    def write(self, gpus: list[dict[str, Any]], **kwargs: Any) -> None:
        self.gpus = gpus
        write_fake_config(self.config, gpus, **kwargs)

    def change(self, index: int, **fields: Any) -> None:
        """Change fields of one fake GPU (the running agent re-reads the file)."""
        gpus = [dict(g) for g in self.gpus]
        gpus[index].update(fields)
        self.write(gpus)

    def node(self) -> dict[str, Any]:
        found = self.c.node(self.node_name)
        assert found is not None
        return found

    def gpu(self, index: int) -> dict[str, Any]:
        return next(g for g in self.node()["gpus"] if g["info"].get("index", 0) == index)

    def wait_gpu(self, index: int, state: str, timeout: float = 20) -> dict[str, Any]:
        return wait_for(
            lambda: (g := self.gpu(index))["state"] == state and g,
            timeout,
            interval=0.1,
            what=f"GPU {index} {state}",
        )

    def gpu_ids(self, job_id: str) -> list[int]:
        return list(self.c.job(job_id)["gpu_ids"][self.node_name])

    def queue_line(self, job_id: str) -> str:
        out = self.c.cli("gqueue", "-j", job_id, check=True).stdout
        return next(line for line in out.splitlines() if line.split()[0] == job_id)

    def events(self, job_id: str) -> list[dict[str, Any]]:
        """The job's event history through JobService.GetJob."""
        from google.protobuf.json_format import MessageToDict

        from rota.v1 import rota_pb2 as pb
        from rota.v1 import rota_pb2_grpc as pb_grpc

        with token_channel(self.c.address, self.c.token) as channel:
            job = pb_grpc.JobServiceStub(channel).GetJob(pb.GetJobRequest(id=job_id), timeout=10)
        return [MessageToDict(e, preserving_proto_field_name=True) for e in job.events]

    def container_pid(self, job_id: str) -> int:
        labels = [f"rota.node={self.node_name}", f"rota.job_id={job_id}", "rota.attempt=1"]
        name = subprocess.run(
            [
                "docker",
                "ps",
                "-aq",
                *(f for label in labels for f in ("--filter", f"label={label}")),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[0]
        out = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Pid}}", name],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(out.stdout.strip())


def gpus(count: int, **fields: Any) -> list[dict[str, Any]]:
    return [fake_gpu(i, **fields) for i in range(count)]


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1)


__all__ = ["SLEEPER", "GpuCluster", "dump", "gpus", "wait_for"]
