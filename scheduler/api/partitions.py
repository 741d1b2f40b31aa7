"""PartitionService servicer (grpc.aio): ``gadmin partition add|update|remove|list``."""

from __future__ import annotations

from typing import Any

from rota.scheduler.api.auth import caller
from rota.scheduler.api.errors import unary
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.partitions import FIELDS, PartitionEntry
from rota.scheduler.engine import Engine
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc

# PartitionSpec field -> PartitionSettings field, where they differ
_RENAMED = {"is_default": "default"}


def spec_fields(spec: pb.PartitionSpec, given: list[str]) -> dict[str, Any]:
    """The ``PartitionSettings`` fields of ``spec``: those named in ``given`` (PartitionSpec
    names), or all of them when ``given`` is empty. UserError for an unknown name."""
    names = list(given) or [f.name for f in pb.PartitionSpec.DESCRIPTOR.fields]
    out: dict[str, Any] = {}
    for name in names:
        field = _RENAMED.get(name, name)
        if name not in pb.PartitionSpec.DESCRIPTOR.fields_by_name or field not in FIELDS:
            raise UserError(
                f"fields: {name!r} is not a partition field; one of "
                f"{', '.join(f.name for f in pb.PartitionSpec.DESCRIPTOR.fields)}"
            )
        value = getattr(spec, name)
        if name == "labels":
            value = dict(value)
        elif not isinstance(value, str | int | float | bool):
            value = list(value)
        out[field] = value
    return out


def entry_to_pb(entry: PartitionEntry) -> pb.PartitionRecord:
    p = entry.settings
    return pb.PartitionRecord(
        name=entry.name,
        spec=pb.PartitionSpec(
            nodes=list(p.nodes),
            labels=dict(p.labels),
            is_default=p.default,
            default_time=p.default_time,
            max_time=p.max_time,
            default_gpus=p.default_gpus,
            max_gpus_per_job=p.max_gpus_per_job,
            allow_users=list(p.allow_users),
            allow_accounts=list(p.allow_accounts),
            priority_tier=p.priority_tier,
        ),
        source=entry.source,
        is_default=entry.is_default,
        changed_by=entry.changed_by,
        changed=entry.changed,
    )


class PartitionServicer(pb_grpc.PartitionServiceServicer):
    """``gadmin partition``: everyone lists, admins change (``core.authz``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @unary
    async def AddPartition(self, request: pb.PartitionRequest, context: Any) -> pb.PartitionRecord:
        fields = spec_fields(request.spec, [])
        entry = await self.engine.partitions.add_partition(request.name, fields, caller())
        return entry_to_pb(entry)

    @unary
    async def UpdatePartition(
        self, request: pb.PartitionRequest, context: Any
    ) -> pb.PartitionRecord:
        if not request.fields:
            raise UserError("fields: name at least one partition field to change")
        fields = spec_fields(request.spec, list(request.fields))
        entry = await self.engine.partitions.update_partition(request.name, fields, caller())
        return entry_to_pb(entry)

    @unary
    async def RemovePartition(
        self, request: pb.RemovePartitionRequest, context: Any
    ) -> pb.RemovePartitionResponse:
        message = await self.engine.partitions.remove_partition(request.name, caller())
        return pb.RemovePartitionResponse(message=message)

    @unary
    async def ListPartitions(
        self, request: pb.ListPartitionsRequest, context: Any
    ) -> pb.ListPartitionsResponse:
        entries = await self.engine.partitions.list_partitions()
        return pb.ListPartitionsResponse(partitions=[entry_to_pb(e) for e in entries])
