"""A stop ordered while the node is still launching the attempt (its container not created or
not started yet) is not lost: the container, once started, is stopped and the attempt reported
KILLED. A two-node batch job whose first node refuses its launch (an ``--output`` directory it
may not write) stops its other node this way; the job used to stay COMPLETING for ever. Real
Docker, the agent's runtime in-process."""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rota.agent.runtime.docker_runtime import DockerRuntime
from rota.agent.runtime.policy import ContainerPolicy
from rota.jobspec import JobSpec, Mount
from rota.messages import AgentEvent, EventKind, KillOrder, LaunchOrder
from tests.cluster import wait_for

pytestmark = pytest.mark.docker


@dataclass(frozen=True)
class _SlowPolicy(ContainerPolicy):
    """Admits the launch only once ``go`` is set: the kill arrives before the container."""

    go: threading.Event = field(default_factory=threading.Event)

    def admit(self, order: LaunchOrder) -> tuple[Mount, ...]:
        self.go.wait(30)
        return super().admit(order)


def test_a_kill_during_the_launch_stops_the_container_once_started(
    tmp_path: Path, test_image: str
) -> None:
    events: list[AgentEvent] = []
    policy = _SlowPolicy()
    node = f"n-{time.monotonic_ns()}"
    runtime = DockerRuntime(node, tmp_path, events.append, time.time, gpu_mode="env", policy=policy)
    try:
        spec = JobSpec(image=test_image, command=("sleep", "300"))
        runtime.launch(LaunchOrder(7, 1, "7", spec, (0,), (), {}, 600.0))
        runtime.kill(KillOrder(7, 1, "the batch script's node refused it", 1.0))
        policy.go.set()
        wait_for(lambda: any(e.kind is EventKind.KILLED for e in events), 30, what="KILLED report")
    finally:
        policy.go.set()
        runtime.close()
        names = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=rota.node={node}"],
            capture_output=True,
            text=True,
        ).stdout.split()
        if names:
            subprocess.run(["docker", "rm", "-f", *names], capture_output=True)
    assert [e.kind for e in events][-1] is EventKind.KILLED
