"""The Docker engine as the runtime starts on it: a client, the GPU mode it supports and the
network mode its job containers get."""

from __future__ import annotations

import logging

import docker
from docker.errors import DockerException

from rota.agent.runtime.engine_args import ENGINE_DOWN, GPU_MODES

log = logging.getLogger("rota.agent")


def new_client(base_url: str | None, timeout: int) -> docker.DockerClient:
    """A client of the engine at ``base_url`` (default: DOCKER_HOST or the local socket)."""
    if base_url:
        return docker.DockerClient(base_url=base_url, timeout=timeout)
    return docker.from_env(timeout=timeout)


def resolve_gpu_mode(client: docker.DockerClient, mode: str) -> str:
    """``mode``, or for ``auto`` nvidia when the engine has the nvidia runtime, else env;
    ValueError for an unknown mode."""
    if mode not in GPU_MODES:
        raise ValueError(f"unknown GPU mode {mode!r}; use one of {', '.join(GPU_MODES)}")
    if mode != "auto":
        return mode
    try:
        runtimes = client.info().get("Runtimes", {})
    except (DockerException, *ENGINE_DOWN):
        runtimes = {}
    if "nvidia" in runtimes:
        return "nvidia"
    log.warning(
        "GPU mode env: the engine has no nvidia runtime, so containers only get "
        "CUDA_VISIBLE_DEVICES and no GPU device (a test/demo mode)"
    )
    return "env"


def default_network(client: docker.DockerClient) -> str:
    """The engine's default ("") when it has a bridge network (or does not answer), else none."""
    try:
        if client.networks.list(names=["bridge"]):
            return ""
    except (DockerException, *ENGINE_DOWN):
        return ""
    log.info("the engine has no bridge network; job containers run with network none")
    return "none"
