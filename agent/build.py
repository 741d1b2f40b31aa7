"""Builds an ``Agent`` from its settings: the one place that chooses the Docker runtime."""

from __future__ import annotations

import time
from collections.abc import Callable

from rota.agent.config import AgentConfig
from rota.agent.daemon import Agent
from rota.agent.runtime.base import ReportFn
from rota.agent.runtime.docker_runtime import DockerRuntime
from rota.agent.runtime.policy import ContainerPolicy
from rota.agent.steps.node import NodeSteps


def build_agent(
    config: AgentConfig,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Agent:
    """The agent of ``config`` running its jobs in Docker (raises when the engine's GPU mode
    cannot be used)."""
    steps = NodeSteps(config.data_dir / "steps", config.node, config.docker_host)

    def runtime(report: ReportFn) -> DockerRuntime:
        return DockerRuntime(
            config.node,
            config.data_dir,
            report,
            clock,
            gpu_mode=config.gpu_mode,
            base_url=config.docker_host,
            network=config.network,
            kill_grace=config.kill_grace,
            max_output=config.max_output,
            policy=container_policy(config),
            sleep=sleep,
            steps=steps,
        )

    return Agent(config, runtime, clock, monotonic, steps)


def container_policy(config: AgentConfig) -> ContainerPolicy:
    """What this node lets a job's container be (docs/security.md)."""
    return ContainerPolicy(
        allowed_mounts=config.allowed_mounts,
        allowed_images=config.allowed_images,
        allowed_registries=config.allowed_registries,
        default_uid=config.default_uid,
        default_gid=config.default_gid,
        allow_root=config.allow_root,
        pids_limit=config.pids_limit,
    )
