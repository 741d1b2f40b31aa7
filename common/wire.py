"""Wire forms of the types every side converts the same way: the job file (``JobSpec``), a node's
inventory, GPU telemetry and attempt statuses.

``*_fields(x)`` gives the keyword arguments of the matching ``rota.v1`` message (nested messages
as dicts, which the generated constructors accept); ``*_from_message(msg)`` reads any object
with that message's fields. Only the conversion modules (``rota.cli.client``,
``rota.scheduler.api.convert``, ``rota.agent.link.convert``) use this module, and it imports no
generated code itself, so those stay the only modules that do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rota.jobspec import DEFAULT_SHM_SIZE, JobSpec, Mount

if TYPE_CHECKING:  # imported where they are built: gsub sends specs without loading them
    from rota.gpus import GpuInfo
    from rota.messages import GpuTelemetry, Inventory, RunningAttempt

Fields = dict[str, Any]


def spec_from_message(msg: Any) -> JobSpec:
    """A domain JobSpec from a ``rota.v1.JobSpec``; structural checks happen in the scheduler."""
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
        notify_url=msg.notify_url,
        notify_on=tuple(msg.notify_on),
        output=msg.output,
        error=msg.error,
        open_mode=msg.open_mode,
        slurm_env=msg.slurm_env,
        submit_dir=msg.submit_dir,
        submit_host=msg.submit_host,
        partition=msg.partition,
        checkpointable=msg.checkpointable,
        signal=msg.signal,
        interactive=msg.interactive,
        tty=msg.tty,
        nodelist=msg.nodelist,
        exclude=msg.exclude,
        mail_type=tuple(msg.mail_type),
        mail_user=msg.mail_user,
        ntasks=msg.ntasks,
        ntasks_per_node=msg.ntasks_per_node,
        gpus_per_task=msg.gpus_per_task,
        constraint=msg.constraint,
    )


def spec_fields(spec: JobSpec) -> Fields:
    return {
        "name": spec.name,
        "image": spec.image,
        "command": list(spec.command),
        "resources": {
            "gpus": spec.gpus,
            "gpu_type": spec.gpu_type,
            "gpu_memory": spec.gpu_memory,
            "cpus": spec.cpus,
            "memory": spec.memory,
        },
        "nodes": spec.nodes,
        "time_limit": spec.time_limit,
        "account": spec.account,
        "qos": spec.qos,
        "priority": spec.priority,
        "preemptible": spec.preemptible,
        "requeue": spec.requeue,
        "dependency": spec.dependency,
        "begin_time": spec.begin_time,
        "array": spec.array,
        "reservation": spec.reservation,
        "node_selector": dict(spec.node_selector),
        "exclusive": spec.exclusive,
        "env": dict(spec.env),
        "mounts": [
            {"source": m.source, "target": m.target, "read_only": m.read_only} for m in spec.mounts
        ],
        "workdir": spec.workdir,
        "shm_size": spec.shm_size,
        "pull": spec.pull,
        "hold": spec.hold,
        "notify_url": spec.notify_url,
        "notify_on": list(spec.notify_on),
        "output": spec.output,
        "error": spec.error,
        "open_mode": spec.open_mode,
        "slurm_env": spec.slurm_env,
        "submit_dir": spec.submit_dir,
        "submit_host": spec.submit_host,
        "partition": spec.partition,
        "checkpointable": spec.checkpointable,
        "signal": spec.signal,
        "interactive": spec.interactive,
        "tty": spec.tty,
        "nodelist": spec.nodelist,
        "exclude": spec.exclude,
        "mail_type": list(spec.mail_type),
        "mail_user": spec.mail_user,
        "ntasks": spec.ntasks,
        "ntasks_per_node": spec.ntasks_per_node,
        "gpus_per_task": spec.gpus_per_task,
        "constraint": spec.constraint,
    }


# Field by field rather than dataclasses.asdict, whose deep copies made up most of the cost of
# a ListNodes page (bench/node_listing.py).


def gpu_fields(gpu: GpuInfo) -> Fields:
    return {
        "index": gpu.index,
        "uuid": gpu.uuid,
        "name": gpu.name,
        "memory_total": gpu.memory_total,
        "pci_bus_id": gpu.pci_bus_id,
        "compute_capability": gpu.compute_capability,
    }


def inventory_fields(inv: Inventory) -> Fields:
    return {
        "gpus": [gpu_fields(g) for g in inv.gpus],
        "links": [
            {"a": link.a, "b": link.b, "level": link.level, "p2p": link.p2p} for link in inv.links
        ],
        "driver_version": inv.driver_version,
        "cuda_version": inv.cuda_version,
        "simulated": inv.simulated,
        "note": inv.note,
        "cpus": inv.cpus,
        "memory": inv.memory,
        "labels": dict(inv.labels),
        "gpu_mode": inv.gpu_mode,
    }


def inventory_from_message(msg: Any) -> Inventory:
    from rota.gpus import GpuInfo, GpuLink
    from rota.messages import Inventory

    return Inventory(
        gpus=tuple(
            GpuInfo(g.index, g.uuid, g.name, g.memory_total, g.pci_bus_id, g.compute_capability)
            for g in msg.gpus
        ),
        links=tuple(GpuLink(link.a, link.b, link.level, link.p2p) for link in msg.links),
        driver_version=msg.driver_version,
        cuda_version=msg.cuda_version,
        simulated=msg.simulated,
        note=msg.note,
        cpus=msg.cpus,
        memory=msg.memory,
        labels=dict(msg.labels),
        gpu_mode=msg.gpu_mode,
    )


def telemetry_fields(t: GpuTelemetry) -> Fields:
    return {
        "index": t.index,
        "uuid": t.uuid,
        "utilization": t.utilization,
        "memory_used": t.memory_used,
        "temperature": t.temperature,
        "power": t.power,
        "error": t.error,
        "processes": [
            {"pid": p.pid, "memory_used": p.memory_used, "job_id": p.job_id} for p in t.processes
        ],
    }


def telemetry_from_message(msg: Any) -> GpuTelemetry:
    """A reading as received; a NaN or infinite utilisation, temperature or power is None
    (no reading), so nothing downstream computes with it or writes it as JSON."""
    from rota.messages import GpuProcess, GpuTelemetry

    return GpuTelemetry(
        index=msg.index,
        uuid=msg.uuid,
        utilization=_finite(msg.utilization),
        memory_used=msg.memory_used,
        temperature=_finite(msg.temperature),
        power=_finite(msg.power),
        error=msg.error,
        processes=tuple(GpuProcess(p.pid, p.memory_used, p.job_id) for p in msg.processes),
    )


def attempt_fields(a: RunningAttempt) -> Fields:
    return {
        "job_id": a.job_id,
        "attempt": a.attempt,
        "container_id": a.container_id,
        "running": a.running,
    }


def attempts_from_messages(msgs: Iterable[Any]) -> tuple[RunningAttempt, ...]:
    from rota.messages import RunningAttempt

    return tuple(RunningAttempt(a.job_id, a.attempt, a.container_id, a.running) for a in msgs)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
