"""The one hook between the dashboard and rota's users: a token in, the caller out.

``TokenCheck`` is the contract the API needs (who is this token, and are they an admin);
``Viewer`` is what it must answer with. The scheduler wires the users service behind it; tests
may wire a table of their own.
"""

from __future__ import annotations

from typing import Protocol


class Viewer(Protocol):
    """Who a dashboard request acts as."""

    @property
    def user(self) -> str: ...

    @property
    def admin(self) -> bool: ...


class TokenCheck(Protocol):
    """The caller a rota token names, or None when it is unknown or revoked (cheap: called on
    every API request)."""

    async def __call__(self, token: str) -> Viewer | None: ...
