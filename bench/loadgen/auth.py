"""The load generator speaks to the scheduler as an admin user, as the CLI does: every call
carries ``authorization: Bearer TOKEN``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc

from rota.cli.rota_admin import bootstrap_admin

USER = "loadgen"


def admin_token(database: Path) -> str:
    """A new token of the admin ``loadgen`` in the scheduler's SQLite ``database``."""
    return bootstrap_admin(f"sqlite:///{database}", USER)


class _Unary(grpc.aio.UnaryUnaryClientInterceptor):
    # grpc.aio files an interceptor under one kind only: one class per kind
    def __init__(self, token: str) -> None:
        self.pair = ("authorization", f"Bearer {token}")

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with(details, self.pair), request)


class _Stream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, token: str) -> None:
        self.pair = ("authorization", f"Bearer {token}")

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(_with(details, self.pair), request)


def _with(details: Any, pair: tuple[str, str]) -> Any:
    return details._replace(metadata=grpc.aio.Metadata(*(details.metadata or ()), pair))


def channel(address: str, token: str, options: Any = None) -> grpc.aio.Channel:
    """An asyncio channel whose calls carry ``token``."""
    return grpc.aio.insecure_channel(
        address, options=options, interceptors=[_Unary(token), _Stream(token)]
    )
