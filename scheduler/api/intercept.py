"""One way to wrap a gRPC handler: the base of the server's interceptors (auth, validation,
metrics).

A subclass says which calls it wraps (``wraps``), what it learns once per call before the
handler runs (``prepare``, e.g. the caller's principal), and what it does before (``enter``:
may abort) and after (``leave``: told the exception the call ended with, if any) each unary or
server-streaming call, and around bidirectional calls a subclass opts into (``wraps_bidi``:
``enter`` and ``leave`` then get no request). Other client-streaming calls (the agent stream)
are never wrapped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc


class HandlerInterceptor(grpc.aio.ServerInterceptor):
    """Wraps the handlers of the calls ``wraps`` accepts with ``enter`` and ``leave``."""

    def wraps(self, method: str, handler: grpc.RpcMethodHandler) -> bool:
        """Whether to wrap ``method`` (default: yes; client-streaming calls never are)."""
        return True

    def wraps_bidi(self, method: str) -> bool:
        """Whether to wrap the bidirectional call ``method`` (default: no)."""
        return False

    async def prepare(self, details: grpc.HandlerCallDetails) -> Any:
        """What ``enter`` and ``leave`` get for every call of this RPC (default None)."""
        return None

    async def enter(
        self, prepared: Any, method: str, request: Any, context: grpc.aio.ServicerContext
    ) -> Any:
        """Before the handler; may ``context.abort``. Returns what ``leave`` gets."""
        return None

    async def leave(
        self,
        entered: Any,
        method: str,
        request: Any,
        context: grpc.aio.ServicerContext,
        failed: BaseException | None,
    ) -> None:
        """After the handler returned (``failed`` None) or raised (``failed``), when ``enter``
        did not abort."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is not None and handler.stream_stream is not None and self.wraps_bidi(method):
            return grpc.stream_stream_rpc_method_handler(
                self._stream(
                    handler.stream_stream,
                    await self.prepare(handler_call_details),
                    method,
                    bidi=True,
                ),
                handler.request_deserializer,
                handler.response_serializer,
            )
        if handler is None or not self.wraps(method, handler) or handler.request_streaming:
            return handler
        prepared = await self.prepare(handler_call_details)
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(handler.unary_unary, prepared, method),
                handler.request_deserializer,
                handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._stream(handler.unary_stream, prepared, method),
                handler.request_deserializer,
                handler.response_serializer,
            )
        return handler

    def _unary(
        self, inner: Callable[..., Awaitable[Any]], prepared: Any, method: str
    ) -> Callable[..., Awaitable[Any]]:
        async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            entered = await self.enter(prepared, method, request, context)
            failed: BaseException | None = None
            try:
                return await inner(request, context)
            except BaseException as exc:
                failed = exc
                raise
            finally:
                await self.leave(entered, method, request, context, failed)

        return unary

    def _stream(
        self,
        inner: Callable[..., AsyncIterator[Any]],
        prepared: Any,
        method: str,
        bidi: bool = False,
    ) -> Callable[..., AsyncIterator[Any]]:
        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            shown = None if bidi else request  # a bidirectional call's requests are its own
            entered = await self.enter(prepared, method, shown, context)
            failed: BaseException | None = None
            try:
                async for item in inner(request, context):
                    yield item
            except BaseException as exc:
                failed = exc
                raise
            finally:
                await self.leave(entered, method, shown, context, failed)

        return stream
