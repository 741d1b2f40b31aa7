"""A gRPC server interceptor that counts RPCs by method and status code and times them."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

import grpc

from rota.scheduler.api.intercept import HandlerInterceptor


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


class MetricsInterceptor(HandlerInterceptor):
    """Reports every unary and server-streaming RPC to ``observer`` when it ends (the agent
    stream, which lasts the agent's life, is not counted)."""

    def __init__(self, observer: RpcObserver) -> None:
        self.observer = observer

    def wraps(self, method: str, handler: grpc.RpcMethodHandler) -> bool:
        # the standard services (health's Watch) stream by context.write, which a wrapping
        # async generator would break: only rota's own streams are timed
        return handler.unary_unary is not None or method.startswith("/rota.")

    async def enter(
        self, prepared: Any, method: str, request: Any, context: grpc.aio.ServicerContext
    ) -> float:
        return time.monotonic()

    async def leave(
        self,
        entered: float,
        method: str,
        request: Any,
        context: grpc.aio.ServicerContext,
        failed: BaseException | None,
    ) -> None:
        self.observer.rpc_done(method, _code(context, failed), time.monotonic() - entered)
