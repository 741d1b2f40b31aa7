"""A gRPC server interceptor that counts RPCs by method and status code and times them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import grpc


class RpcObserver(Protocol):
    def rpc_done(self, method: str, code: str, seconds: float) -> None: ...


def _code(context: grpc.aio.ServicerContext, failed: BaseException | None) -> str:
    """The status the call ended with: the one the servicer set (``abort``), else OK, else
    CANCELLED (the client went away) or UNKNOWN (an unexpected error)."""
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return str(code.name)
    if isinstance(code, int):
        named = {c.value[0]: c.name for c in grpc.StatusCode}
        if code in named:
            return named[code]
    if failed is None:
        return "OK"
    return "CANCELLED" if isinstance(failed, asyncio.CancelledError) else "UNKNOWN"


class MetricsInterceptor(grpc.aio.ServerInterceptor):
    """Reports every unary and server-streaming RPC to ``observer`` when it ends (the agent
    stream, which lasts the agent's life, is not counted)."""

    def __init__(self, observer: RpcObserver) -> None:
        self.observer = observer

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_streaming:
            return handler
        method = handler_call_details.method
        observer = self.observer
        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                began, failed = time.monotonic(), None
                try:
                    return await inner(request, context)
                except BaseException as exc:
                    failed = exc
                    raise
                finally:
                    observer.rpc_done(method, _code(context, failed), time.monotonic() - began)

            return grpc.unary_unary_rpc_method_handler(
                unary, handler.request_deserializer, handler.response_serializer
            )
        if handler.unary_stream is not None and method.startswith("/rota."):
            # the standard services (health's Watch) stream by context.write, which a wrapping
            # async generator would break: only rota's own streams are timed
            inner_stream = handler.unary_stream

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                began, failed = time.monotonic(), None
                try:
                    async for item in inner_stream(request, context):
                        yield item
                except BaseException as exc:
                    failed = exc
                    raise
                finally:
                    observer.rpc_done(method, _code(context, failed), time.monotonic() - began)

            return grpc.unary_stream_rpc_method_handler(
                stream, handler.request_deserializer, handler.response_serializer
            )
        return handler
