"""The rota.v1 agent messages a simulated node sends, shaped like a real agent's on an 8-GPU
host read through NVML (agent/link/stream.py builds the same messages from live readings).

Values are plausible for an HGX H100 board: 8 GPUs of 80 GiB, NVLink between every pair, idle
GPUs at 0 % and ~35 C, busy GPUs with one process that belongs to the job.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass, field

from rota import __version__
from rota.v1 import rota_pb2 as pb

GPUS_PER_NODE = 8
GPU_MEMORY = 81_559 * 2**20  # what NVML reports for an H100 80GB HBM3
GPU_NAME = "NVIDIA H100 80GB HBM3"


def inventory(node: str, gpus: int = GPUS_PER_NODE) -> pb.Inventory:
    """The inventory a real agent sends in its hello: GPUs, every pair's link, host size."""
    return pb.Inventory(
        gpus=[
            pb.GpuInfo(
                index=i,
                uuid=gpu_uuid(node, i),
                name=GPU_NAME,
                memory_total=GPU_MEMORY,
                pci_bus_id=f"00000000:{0x18 + 0x10 * i:02X}:00.0",
                compute_capability="9.0",
            )
            for i in range(gpus)
        ],
        links=[
            pb.GpuLink(a=a, b=b, level="NV18", p2p=True)
            for a in range(gpus)
            for b in range(a + 1, gpus)
        ],
        driver_version="550.54.15",
        cuda_version="12.4",
        cpus=224.0,
        memory=2 * 2**40,
        gpu_mode="nvidia",
    )


def gpu_uuid(node: str, index: int) -> str:
    """A stable NVML-shaped UUID (GPU- and 36 characters) per node and index."""
    digest = hashlib.md5(f"{node}/{index}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:]}"


@dataclass
class Attempt:
    """A job attempt the simulated node holds, as the real agent's runtime tracks a container."""

    job_id: int
    attempt: int
    display_id: str
    gpu_indices: tuple[int, ...]
    container_id: str = field(default_factory=lambda: f"{random.getrandbits(256):064x}")
    running: bool = True
    pid: int = field(default_factory=lambda: random.randint(1000, 4_000_000))

    def status(self) -> pb.AttemptStatus:
        return pb.AttemptStatus(
            job_id=self.job_id,
            attempt=self.attempt,
            container_id=self.container_id,
            running=self.running,
        )


def hello(node: str, token: str, attempts: list[Attempt]) -> pb.AgentMessage:
    return pb.AgentMessage(
        hello=pb.Hello(
            node_name=node,
            token=token,
            agent_version=__version__,
            inventory=inventory(node),
            attempts=[a.status() for a in attempts],
            address=node,
        )
    )


def heartbeat(uuids: list[str], attempts: list[Attempt]) -> pb.AgentMessage:
    """Telemetry of every GPU (busy ones carry their job's process) and the held attempts."""
    owner = {i: a for a in attempts if a.running for i in a.gpu_indices}
    gpus = []
    for index, uuid in enumerate(uuids):
        job = owner.get(index)
        if job is None:
            gpus.append(
                pb.GpuTelemetry(
                    index=index,
                    uuid=uuid,
                    utilization=0.0,
                    memory_used=4 * 2**20,
                    temperature=33.0 + random.random() * 4,
                    power=68.0 + random.random() * 6,
                )
            )
        else:
            gpus.append(
                pb.GpuTelemetry(
                    index=index,
                    uuid=uuid,
                    utilization=float(random.randint(85, 100)),
                    memory_used=61_440 * 2**20,
                    temperature=60.0 + random.random() * 10,
                    power=550.0 + random.random() * 120,
                    processes=[
                        pb.GpuProcess(
                            pid=job.pid, memory_used=61_400 * 2**20, job_id=job.display_id
                        )
                    ],
                )
            )
    return pb.AgentMessage(
        heartbeat=pb.Heartbeat(
            gpus=gpus,
            attempts=[a.status() for a in attempts],
            engine_healthy=True,
            time=time.time(),
        )
    )


def job_event(a: Attempt, kind: str, exit_code: int = 0, message: str = "") -> pb.AgentMessage:
    return pb.AgentMessage(
        job_event=pb.AgentJobEvent(
            job_id=a.job_id,
            attempt=a.attempt,
            kind=pb.JobEventKind.Value(kind),
            exit_code=exit_code,
            message=message,
            time=time.time(),
        )
    )


def log_eof(request_id: int) -> pb.AgentMessage:
    """The answer to a log request: the simulated jobs print nothing."""
    return pb.AgentMessage(log_data=pb.LogData(request_id=request_id, eof=True))


def keepalive() -> pb.AgentMessage:
    return pb.AgentMessage(keepalive=pb.Keepalive())


def floor_replies(
    heartbeat_interval: float, node_grace: float, telemetry_period: float, keepalive: float
) -> tuple[bytes, bytes]:
    """The serialized welcome and pong the bare floor server answers with: the periods the
    scheduler gave, so the floor receives the same message rate."""
    welcome = pb.SchedulerMessage(
        welcome=pb.Welcome(
            heartbeat_interval=heartbeat_interval,
            scheduler_version=__version__,
            node_grace=node_grace,
            telemetry_period=telemetry_period,
            keepalive_interval=keepalive,
        )
    )
    pong = pb.SchedulerMessage(pong=pb.Pong(time=time.time(), telemetry_period=telemetry_period))
    return welcome.SerializeToString(), pong.SerializeToString()
