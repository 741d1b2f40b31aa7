"""Who made a request, as the servicers pass it on to the engine."""

from __future__ import annotations

from typing import Any


def user_of(request: Any) -> str:
    """The request's ``user`` field ("unknown" when empty). Until users and tokens exist this
    is what the client says (the OS user who ran the command): recorded, not checked."""
    return request.user or "unknown"
