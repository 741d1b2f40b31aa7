"""AdminService servicer (grpc.aio): node registration, drain, resume and removal."""

from __future__ import annotations

from typing import Any

from rota.scheduler.api import convert_nodes
from rota.scheduler.api.auth import caller
from rota.scheduler.api.errors import unary
from rota.scheduler.engine import Engine
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc


class AdminServicer(pb_grpc.AdminServiceServicer):
    """Node registration, drain, resume and removal (admins only: ``core.authz``); the caller
    is recorded as who made the change."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @unary
    async def AddNode(self, request: pb.AddNodeRequest, context: Any) -> pb.AddNodeResponse:
        token = await self.engine.nodes.add_node(
            request.name, dict(request.labels), request.rotate_token, caller()
        )
        return pb.AddNodeResponse(name=request.name.strip(), token=token)

    @unary
    async def DrainNode(self, request: pb.DrainNodeRequest, context: Any) -> pb.Node:
        shown = await self.engine.nodes.drain_node(request.name, request.reason, caller())
        return convert_nodes.node_to_pb(*shown)

    @unary
    async def ResumeNode(self, request: pb.ResumeNodeRequest, context: Any) -> pb.Node:
        return convert_nodes.node_to_pb(
            *await self.engine.nodes.resume_node(request.name, caller())
        )

    @unary
    async def RemoveNode(
        self, request: pb.RemoveNodeRequest, context: Any
    ) -> pb.RemoveNodeResponse:
        result = await self.engine.nodes.remove_node(request.name, request.force, caller())
        return pb.RemoveNodeResponse(requeued=list(result.requeued), failed=list(result.failed))
