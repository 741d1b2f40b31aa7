"""Shared wire conversions: the job file (``JobSpec``) and static GPU facts.

Used by the conversion layers only (the CLI's client, the scheduler's api, the agent's link).
"""

from __future__ import annotations

from collections.abc import Iterable

from rota.gpus import GpuInfo, GpuLink
from rota.jobspec import DEFAULT_SHM_SIZE, JobSpec, Mount
from rota.v1 import rota_pb2 as pb


def spec_from_pb(msg: pb.JobSpec) -> JobSpec:
    """A domain JobSpec from the wire; structural checks happen in Core."""
    res = msg.resources
    return JobSpec(
        image=msg.image,
        command=tuple(msg.command),
        name=msg.name,
        gpus=res.gpus,
        gpu_type=res.gpu_type,
        gpu_memory=res.gpu_memory,
        cpus=res.cpus,
        memory=res.memory,
        nodes=msg.nodes or 1,
        time_limit=msg.time_limit,
        account=msg.account,
        qos=msg.qos,
        priority=msg.priority,
        preemptible=msg.preemptible,
        requeue=msg.requeue,
        dependency=msg.dependency,
        begin_time=msg.begin_time,
        array=msg.array,
        reservation=msg.reservation,
        node_selector=dict(msg.node_selector),
        exclusive=msg.exclusive,
        env=dict(msg.env),
        mounts=tuple(Mount(m.source, m.target, m.read_only) for m in msg.mounts),
        workdir=msg.workdir,
        shm_size=msg.shm_size or DEFAULT_SHM_SIZE,
        pull=msg.pull or "missing",
        hold=msg.hold,
    )


def spec_to_pb(spec: JobSpec) -> pb.JobSpec:
    return pb.JobSpec(
        name=spec.name,
        image=spec.image,
        command=list(spec.command),
        resources=pb.Resources(
            gpus=spec.gpus,
            gpu_type=spec.gpu_type,
            gpu_memory=spec.gpu_memory,
            cpus=spec.cpus,
            memory=spec.memory,
        ),
        nodes=spec.nodes,
        time_limit=spec.time_limit,
        account=spec.account,
        qos=spec.qos,
        priority=spec.priority,
        preemptible=spec.preemptible,
        requeue=spec.requeue,
        dependency=spec.dependency,
        begin_time=spec.begin_time,
        array=spec.array,
        reservation=spec.reservation,
        node_selector=dict(spec.node_selector),
        exclusive=spec.exclusive,
        env=dict(spec.env),
        mounts=[
            pb.Mount(source=m.source, target=m.target, read_only=m.read_only) for m in spec.mounts
        ],
        workdir=spec.workdir,
        shm_size=spec.shm_size,
        pull=spec.pull,
        hold=spec.hold,
    )


def gpus_to_pb(gpus: Iterable[GpuInfo]) -> list[pb.GpuInfo]:
    return [
        pb.GpuInfo(
            index=g.index,
            uuid=g.uuid,
            name=g.name,
            memory_total=g.memory_total,
            pci_bus_id=g.pci_bus_id,
            compute_capability=g.compute_capability,
        )
        for g in gpus
    ]


def gpus_from_pb(msgs: Iterable[pb.GpuInfo]) -> tuple[GpuInfo, ...]:
    return tuple(
        GpuInfo(g.index, g.uuid, g.name, g.memory_total, g.pci_bus_id, g.compute_capability)
        for g in msgs
    )


def links_to_pb(links: Iterable[GpuLink]) -> list[pb.GpuLink]:
    return [pb.GpuLink(a=link.a, b=link.b, level=link.level, p2p=link.p2p) for link in links]


def links_from_pb(msgs: Iterable[pb.GpuLink]) -> tuple[GpuLink, ...]:
    return tuple(GpuLink(link.a, link.b, link.level, link.p2p) for link in msgs)
