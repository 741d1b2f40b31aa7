"""Channels that send a user token with every call, as the CLI does."""

from __future__ import annotations

from typing import Any

import grpc


def bearer(token: str) -> tuple[str, str]:
    return ("authorization", f"Bearer {token}")


class _AioUnary(grpc.aio.UnaryUnaryClientInterceptor):
    # grpc.aio files an interceptor under one kind only: one class per kind
    def __init__(self, token: str) -> None:
        self.pair = bearer(token)

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with(details, self.pair), request)


class _AioStream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, token: str) -> None:
        self.pair = bearer(token)

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with(details, self.pair), request)


def _with(details: Any, pair: tuple[str, str]) -> Any:
    return details._replace(metadata=grpc.aio.Metadata(*(details.metadata or ()), pair))


class _Bearer(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    def __init__(self, token: str) -> None:
        self.pair = bearer(token)

    def _details(self, details: Any) -> Any:
        return details._replace(metadata=[*(details.metadata or ()), self.pair])

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)


def channel(address: str, token: str) -> grpc.Channel:
    """A blocking channel whose calls carry ``token``."""
    return grpc.intercept_channel(grpc.insecure_channel(address), _Bearer(token))


def aio_channel(address: str, token: str) -> grpc.aio.Channel:
    """An asyncio channel whose unary and server-streaming calls carry ``token``."""
    return grpc.aio.insecure_channel(address, interceptors=[_AioUnary(token), _AioStream(token)])
