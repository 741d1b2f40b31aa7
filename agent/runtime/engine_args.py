"""What the agent asks the Docker engine for: a container's create arguments, its name and
labels, and how Docker's own texts (times, errors) are read back.

Every container carries labels (node, the agent's id, job id, attempt, time limit, GPUs) and a
name unique on its engine (``identity``), so a restarted agent adopts what is still there, a
second launch of the same attempt never starts a second container, and another agent of the
same node name on that engine (another user's ``rota up``) neither collides with nor adopts it.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound
from docker.types import DeviceRequest, Mount

from rota.agent.runtime.policy import ContainerPolicy, Identity
from rota.jobspec import JobSpec
from rota.jobspec import Mount as JobMount
from rota.messages import LaunchOrder

LABEL_NODE = "rota.node"
LABEL_AGENT = "rota.agent"  # the agent's id (identity.agent_id): whose container it is
LABEL_JOB = "rota.job_id"
LABEL_ATTEMPT = "rota.attempt"
LABEL_DISPLAY = "rota.display_id"
LABEL_LIMIT = "rota.time_limit"
LABEL_GPUS = "rota.gpus"  # host GPU indices, comma-separated
LABEL_SIGNAL = "rota.signal"  # the job's warning signal, "NAME@SECONDS"
GPU_MODES = ("auto", "nvidia", "env")
ENGINE_DOWN = (requests.exceptions.ConnectionError, requests.exceptions.Timeout)


# a node name the kernel takes as a container's host name (at most 63 characters, no "_")
HOSTNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,62}")


def create_args(
    order: LaunchOrder,
    mounts: tuple[JobMount, ...],
    node: str,
    policy: ContainerPolicy,
    gpu_mode: str,
    network: str,
    who: Identity | None = None,
    workdir: str = "",
    home: str = "",
    agent: str = "",
) -> dict[str, Any]:
    """``containers.create`` arguments; ``mounts`` as ``policy.admit`` resolved (and the
    stager staged) them; ``gpu_mode`` "nvidia" or "env"; ``network`` "" for the engine's;
    ``who`` the container's user (``policy.identity`` when None); ``workdir`` and ``home``
    as ``workplace.prepare`` decided them ("" = the spec's ``workdir``, the image's ``HOME``);
    ``agent`` the agent's id (``identity.agent_id``), in the name and labels."""
    spec = order.spec
    env = order.container_env  # policy.admit refused user values for the GPU variables
    who = who or policy.identity(order)
    kwargs: dict[str, Any] = {"user": f"{who.uid}:{who.gid}", **policy.hardening()}
    if who.groups:
        kwargs["group_add"] = [str(g) for g in who.groups]
    if home:
        env["HOME"] = home
    indices = ",".join(str(i) for i in order.gpu_indices)
    if gpu_mode == "nvidia" and order.gpu_uuids:
        kwargs["device_requests"] = [
            DeviceRequest(driver="nvidia", device_ids=list(order.gpu_uuids), capabilities=[["gpu"]])
        ]
    elif gpu_mode == "nvidia":
        env["NVIDIA_VISIBLE_DEVICES"] = "void"
    else:
        env["CUDA_VISIBLE_DEVICES"] = indices
        env["NVIDIA_VISIBLE_DEVICES"] = indices or "void"
    if order.host_network:
        kwargs["network_mode"] = "host"
    elif network:
        kwargs["network_mode"] = network
    if not order.host_network and HOSTNAME.fullmatch(node):
        kwargs["hostname"] = node  # `hostname` (srun hostname) names the node, as under SLURM
    if spec.cpus:
        kwargs["nano_cpus"] = int(spec.cpus * 1e9)
    if spec.memory:
        kwargs["mem_limit"] = spec.memory
    if spec.shm_size:
        kwargs["shm_size"] = spec.shm_size
    if workdir or spec.workdir:
        kwargs["working_dir"] = workdir or spec.workdir
    if spec.interactive:  # grun: stdin kept open for the session to attach to
        kwargs["stdin_open"] = True
        kwargs["tty"] = spec.tty
    if mounts:
        kwargs["mounts"] = [
            Mount(target=m.target, source=m.source, type="bind", read_only=m.read_only)
            for m in mounts
        ]
    return dict(
        image=spec.image,
        command=list(spec.command),
        name=container_name(node, order.job_id, order.attempt, agent),
        environment=env,
        labels={
            LABEL_NODE: node,
            LABEL_AGENT: agent,
            LABEL_JOB: str(order.job_id),
            LABEL_ATTEMPT: str(order.attempt),
            LABEL_DISPLAY: order.display_id,
            LABEL_LIMIT: str(order.time_limit),
            LABEL_GPUS: indices,
            LABEL_SIGNAL: spec.signal,
        },
        init=True,
        # docker-py sets StdinOnce exactly when a container with open stdin is not detached:
        # a piped session's input then ends when its client closes it (a terminal's never)
        detach=not (spec.interactive and not spec.tty),
        **kwargs,
    )


def ensure_image(client: docker.DockerClient, spec: JobSpec) -> None:
    """Pull ``spec``'s image as its ``pull`` policy says; DockerException when it cannot be had."""
    if spec.pull == "always":
        client.images.pull(spec.image)
        return
    try:
        client.images.get(spec.image)
    except ImageNotFound:
        if spec.pull == "never":
            raise DockerException(
                f"image {spec.image} is not present on the node and pull is never"
            ) from None
        try:
            client.images.pull(spec.image)
        except (APIError, DockerException) as exc:
            raise DockerException(
                f"image {spec.image} is not present on the node and pulling it failed: "
                f"{engine_message(exc)}"
            ) from None


def image_path(client: docker.DockerClient, image: str) -> str:
    """The ``PATH`` the image sets ("" when none)."""
    env = client.images.get(image).attrs["Config"].get("Env") or []
    return next((e[5:] for e in env if e.startswith("PATH=")), "")


def container_name(node: str, job_id: int, attempt: int, agent: str = "") -> str:
    """``rota-NODE-JOB-ATTEMPT``, with the agent's id after the node when given."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "-", node)
    owner = f"{safe}-{agent}" if agent else safe
    return f"rota-{owner}-{job_id}-{attempt}"


def parse_time(text: str) -> float:
    """Docker's RFC 3339 time with nanoseconds -> Unix seconds (0 for the zero time).

    Docker's own format, read back from the engine; not a grammar users write (``rota.when``).
    """
    if not text or text.startswith("0001-"):
        return 0.0
    m = re.match(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", text)
    if not m:
        return 0.0
    frac = (m.group(2) or "0")[:6].ljust(6, "0")
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.fromisoformat(f"{m.group(1)}.{frac}{zone}").timestamp()


def engine_message(exc: BaseException) -> str:
    if isinstance(exc, APIError):
        return str(exc.explanation or exc)
    return short(exc)


def short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
