"""GpuService servicer (grpc.aio): ``gadmin gpu resume|drain NODE INDEX``.

Thin like the other servicers: one Core call on the core thread each, then a scheduling pass
(a resumed GPU can take pending jobs at once).
"""

from __future__ import annotations

from typing import Any

import grpc

from rota.scheduler.api.servicers import _guard
from rota.scheduler.engine import Engine
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc


class GpuServicer(pb_grpc.GpuServiceServicer):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def ResumeGpu(self, request: pb.GpuActionRequest, context: Any) -> pb.GpuActionResponse:
        core = self.engine.core
        message = await _guard(
            context,
            self.engine.call(
                core.resume_gpu, request.node, request.index, request.user or "unknown"
            ),
        )
        self.engine.request_pass()
        return pb.GpuActionResponse(message=message)

    async def DrainGpu(self, request: pb.GpuActionRequest, context: Any) -> pb.GpuActionResponse:
        core = self.engine.core
        message = await _guard(
            context,
            self.engine.call(
                core.drain_gpu,
                request.node,
                request.index,
                request.user or "unknown",
                request.reason,
            ),
        )
        self.engine.request_pass()
        return pb.GpuActionResponse(message=message)


def add_gpu_servicer(server: grpc.aio.Server, engine: Engine) -> None:
    pb_grpc.add_GpuServiceServicer_to_server(GpuServicer(engine), server)
