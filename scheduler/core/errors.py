"""Domain errors the services raise; ``api.errors`` maps each to one gRPC status code."""

from __future__ import annotations


class UserError(Exception):
    """A request that is invalid as sent; the message names the field (INVALID_ARGUMENT)."""


class NotFound(Exception):
    """An id that names nothing (NOT_FOUND)."""


class AuthError(Exception):
    """A caller without valid credentials: no or a wrong token (UNAUTHENTICATED)."""


class AccessDenied(Exception):
    """A known caller asking for what they may not do; the message says why
    (PERMISSION_DENIED)."""


class Conflict(Exception):
    """The request is valid but the cluster's state refuses it (FAILED_PRECONDITION)."""


class AlreadyExists(Conflict):
    """The request would create something that exists already (ALREADY_EXISTS)."""


def token_refusal(token: str) -> str:
    """Why a request without a current user token is refused (``token``: the one it sent, ""
    for none); gRPC and the commands' HTTP routes answer the same words."""
    if not token:
        return (
            "no user token: set ROTA_TOKEN or ~/.config/rota/credentials "
            "(an admin makes one with `gadmin user add`)"
        )
    return "the user token is not valid (wrong, replaced or revoked)"
