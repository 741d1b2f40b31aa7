"""GpuService servicer (grpc.aio): ``gadmin gpu resume|drain NODE INDEX``."""

from __future__ import annotations

from typing import Any

from rota.scheduler.api.auth import caller
from rota.scheduler.api.errors import unary
from rota.scheduler.engine import Engine
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc


class GpuServicer(pb_grpc.GpuServiceServicer):
    """``gadmin gpu resume|drain NODE INDEX``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @unary
    async def ResumeGpu(self, request: pb.GpuActionRequest, context: Any) -> pb.GpuActionResponse:
        message = await self.engine.nodes.resume_gpu(request.node, request.index, caller())
        return pb.GpuActionResponse(message=message)

    @unary
    async def DrainGpu(self, request: pb.GpuActionRequest, context: Any) -> pb.GpuActionResponse:
        message = await self.engine.nodes.drain_gpu(
            request.node, request.index, request.reason, caller()
        )
        return pb.GpuActionResponse(message=message)
