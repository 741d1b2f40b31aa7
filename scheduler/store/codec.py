"""The JSON forms of the values stored in JSON columns: a job's spec, its allocation and a
node's inventory.

A stored inventory has the shape of its wire message, so it is written by ``rota.wire``; a
stored spec is flat (the ``JobSpec`` fields by name, unlike the wire's nested ``resources``)
and keeps that shape so existing databases still read. Readers take rows written by older
versions: missing keys get their defaults, unknown keys are ignored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from rota.gpus import GpuInfo, GpuLink
from rota.jobspec import JobSpec, Mount
from rota.messages import Inventory
from rota.scheduler.cluster.model import NodeAlloc
from rota.wire import inventory_fields

_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(JobSpec))
_KNOWN = frozenset(_SPEC_FIELDS)


def spec_to_json(spec: JobSpec) -> dict[str, Any]:
    """A JSON-safe dict of a JobSpec (field by field: ``dataclasses.asdict``'s deep copies were
    half the cost of storing a submission)."""
    data = {name: getattr(spec, name) for name in _SPEC_FIELDS}
    data["command"] = list(spec.command)
    data["notify_on"] = list(spec.notify_on)
    data["mail_type"] = list(spec.mail_type)
    data["mounts"] = [dataclasses.asdict(m) for m in spec.mounts]
    data["node_selector"] = dict(spec.node_selector)
    data["env"] = dict(spec.env)
    return data


def spec_from_json(data: dict[str, Any]) -> JobSpec:
    """The inverse of spec_to_json; unknown keys (from newer versions) are ignored."""
    values = {k: v for k, v in data.items() if k in _KNOWN}
    values["command"] = tuple(values.get("command", ()))
    values["mounts"] = tuple(Mount(**m) for m in values.get("mounts", ()))
    values["notify_on"] = tuple(values.get("notify_on", ()))
    values["mail_type"] = tuple(values.get("mail_type", ()))
    return JobSpec(**values)


def alloc_to_json(allocation: Sequence[NodeAlloc]) -> list[dict[str, Any]] | None:
    """A job's allocation in gang rank order; None (SQL NULL) when it has none."""
    if not allocation:
        return None
    return [
        {
            "node": a.node,
            "gpus": list(a.gpus),
            "uuids": list(a.uuids),
            "cpus": a.cpus,
            "memory": a.memory,
            "port": a.port,
        }
        for a in allocation
    ]


def alloc_from_json(data: Any) -> list[NodeAlloc]:
    if not data:
        return []
    return [
        NodeAlloc(
            d["node"],
            tuple(d["gpus"]),
            tuple(d.get("uuids", ())),
            d.get("cpus", 0.0),
            d.get("memory", 0),
            d.get("port", 0),
        )
        for d in data
    ]


def inventory_to_json(inv: Inventory) -> dict[str, Any]:
    """A node's inventory as stored: its wire fields (plain JSON already)."""
    return inventory_fields(inv)


def inventory_from_json(data: dict[str, Any] | None) -> Inventory:
    if not data:
        return Inventory()
    return Inventory(
        gpus=tuple(GpuInfo(**g) for g in data.get("gpus", ())),
        links=tuple(GpuLink(**link) for link in data.get("links", ())),
        driver_version=data.get("driver_version", ""),
        cuda_version=data.get("cuda_version", ""),
        simulated=data.get("simulated", False),
        note=data.get("note", ""),
        cpus=data.get("cpus", 0.0),
        memory=data.get("memory", 0),
        labels=data.get("labels", {}),
        gpu_mode=data.get("gpu_mode", ""),
    )
