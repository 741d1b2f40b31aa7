"""The one hook between the dashboard and rota's users: a token in, the caller out.

``TokenCheck`` is the contract the API needs; ``EngineTokens`` answers it from the users
service, as the gRPC interceptor does: memory first, the store (on the core thread) for a token
memory does not know yet, so a revoked or replaced token stops working at once.
"""

from __future__ import annotations

from typing import Protocol

from rota.scheduler.cluster.users import Principal
from rota.scheduler.engine import Engine


class TokenCheck(Protocol):
    """The principal a rota token names, or None when it is unknown or revoked."""

    async def __call__(self, token: str) -> Principal | None: ...

    async def by_hash(self, token_hash: str) -> Principal | None:
        """The principal whose current token hashes to ``token_hash`` (a stored session's)."""
        ...


class EngineTokens:
    """``TokenCheck`` over the engine's users service."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, token: str) -> Principal | None:
        return self.engine.users.authenticate(token) or await self.engine.users.load_principal(
            token
        )

    async def by_hash(self, token_hash: str) -> Principal | None:
        users = self.engine.users
        return users.authenticate_hash(token_hash) or await users.load_principal_hash(token_hash)
