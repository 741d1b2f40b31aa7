"""AdminService servicer (grpc.aio): node registration, drain, resume and removal.

Thin like the other servicers: protobuf <-> domain, one Core call on the core thread each.
``Conflict`` maps to FAILED_PRECONDITION (ALREADY_EXISTS for a name already registered).
Admin authentication comes with users and tokens; until then the request's ``user`` (the OS
user who ran ``gadmin``) is recorded as who made the change.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

import grpc

from rota.scheduler.api import convert
from rota.scheduler.api.servicers import _guard
from rota.scheduler.cluster.model import NodeState
from rota.scheduler.core import Conflict
from rota.scheduler.engine import Engine
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc

T = TypeVar("T")


async def _admin_guard(context: grpc.aio.ServicerContext, work: Awaitable[T]) -> T:
    try:
        return await _guard(context, work)
    except Conflict as exc:
        code = (
            grpc.StatusCode.ALREADY_EXISTS
            if "already registered" in str(exc)
            else grpc.StatusCode.FAILED_PRECONDITION
        )
        await context.abort(code, str(exc))
    raise AssertionError("unreachable")


class AdminServicer(pb_grpc.AdminServiceServicer):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def AddNode(self, request: pb.AddNodeRequest, context: Any) -> pb.AddNodeResponse:
        core = self.engine.core
        token = await _admin_guard(
            context,
            self.engine.call(
                core.add_node,
                request.name,
                dict(request.labels),
                request.user or "unknown",
                request.rotate_token,
            ),
        )
        if request.rotate_token:
            self.engine.disconnect(request.name)  # the old token's stream ends now
        self.engine.request_pass()
        return pb.AddNodeResponse(name=request.name.strip(), token=token)

    async def DrainNode(self, request: pb.DrainNodeRequest, context: Any) -> pb.Node:
        core = self.engine.core
        await _admin_guard(
            context,
            self.engine.call(
                core.drain_node, request.name, request.reason, request.user or "unknown"
            ),
        )
        self.engine.request_pass()
        return await self._node(request.name, context)

    async def ResumeNode(self, request: pb.ResumeNodeRequest, context: Any) -> pb.Node:
        core = self.engine.core
        await _admin_guard(
            context, self.engine.call(core.resume_node, request.name, request.user or "unknown")
        )
        self.engine.request_pass()
        return await self._node(request.name, context)

    async def RemoveNode(
        self, request: pb.RemoveNodeRequest, context: Any
    ) -> pb.RemoveNodeResponse:
        core = self.engine.core
        result, orders = await _admin_guard(
            context,
            self.engine.call(
                core.remove_node, request.name, request.force, request.user or "unknown"
            ),
        )
        self.engine.dispatch(orders)  # stop its containers, then end its stream
        self.engine.disconnect(request.name)
        self.engine.request_pass()
        return pb.RemoveNodeResponse(requeued=list(result.requeued), failed=list(result.failed))

    async def _node(self, name: str, context: Any) -> pb.Node:
        found: list[tuple[NodeState, Any]] = [
            (n, s) for n, s in await self.engine.list_nodes() if n.name == name
        ]
        if not found:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"node {name!r} is not registered")
        return convert.node_to_pb(*found[0])


def add_admin_servicer(server: grpc.aio.Server, engine: Engine) -> None:
    pb_grpc.add_AdminServiceServicer_to_server(AdminServicer(engine), server)
