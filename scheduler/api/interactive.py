"""InteractiveService (grpc.aio): one bidirectional stream per session, translated to and
from the engine's ``interactive`` facade."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from rota.messages import SessionInput, SessionOutput
from rota.scheduler.api.auth import caller
from rota.scheduler.api.errors import streaming
from rota.scheduler.core.errors import UserError
from rota.scheduler.engine import Engine
from rota.scheduler.facade.interactive import ClientOpen, SessionEvent, Started, Waiting
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc


class InteractiveServicer(pb_grpc.InteractiveServiceServicer):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @streaming
    async def Interact(
        self, request_iterator: AsyncIterator[pb.InteractRequest], context: Any
    ) -> AsyncGenerator[pb.InteractReply, None]:
        first = await anext(request_iterator, None)
        if first is None:
            raise UserError("the first request must open a session (job_id and kind)")
        opening = ClientOpen(
            first.job_id,
            first.kind,
            tuple(first.command),
            first.tty,
            first.rows,
            first.cols,
            first.port,
            first.node,
            first.reopen,
            first.replay,
            first.resume_from,
        )
        events = self.engine.interactive.interact(
            opening, _inputs(first, request_iterator), caller(), context.peer() or ""
        )
        try:
            async for event in events:
                yield _reply(event)
        finally:
            await events.aclose()


async def _inputs(
    first: pb.InteractRequest, rest: AsyncIterator[pb.InteractRequest]
) -> AsyncGenerator[SessionInput, None]:
    """The client's input: data the opening request carried, then each later request's."""
    if first.data or first.eof:
        yield SessionInput(0, first.data, first.eof)
    async for msg in rest:
        yield SessionInput(0, msg.data, msg.eof, msg.rows, msg.cols)


def _reply(event: SessionEvent) -> pb.InteractReply:
    if isinstance(event, Waiting):
        return pb.InteractReply(
            state=event.state, reason=event.reason, estimated_start=event.estimated_start
        )
    if isinstance(event, Started):
        return pb.InteractReply(started=True)
    return _output(event)


def _output(out: SessionOutput) -> pb.InteractReply:
    return pb.InteractReply(
        stream=out.stream,
        data=out.data,
        exited=out.exited,
        exit_code=out.exit_code,
        error=out.error,
        offset=out.offset,
        detached=out.detached,
    )
