"""How a failed gRPC call reads: one line and an exit code (CONVENTIONS.md), naming the
scheduler address and, where gRPC says little, what the client most likely lacks."""

from __future__ import annotations

import grpc

from rota.cli.errors import CliError
from rota.cli.target import Target, closed_hint


def translate(target: Target, exc: grpc.RpcError) -> CliError:
    """The one-line error (and exit code) a failed call to ``target`` is shown as."""
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    if code is grpc.StatusCode.UNAVAILABLE and target.ca and _tls_failure(details):
        return CliError(
            f"TLS with the rota scheduler at {target.address} failed (CA "
            f"{target.ca}; a scheduler name not in its certificate, a wrong CA, or a "
            "missing client certificate)",
            1,
        )
    if code is grpc.StatusCode.UNAVAILABLE and "is a standby" in (details or ""):
        return CliError(
            f"no rota scheduler at {target.address} leads (address from "
            f"{target.source}): {details}; add the leader's address to --scheduler or "
            "ROTA_SCHEDULER",
            1,
        )
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return CliError(
            f"cannot reach the rota scheduler at {target.address} "
            f"(address from {target.source}; set --scheduler or ROTA_SCHEDULER): "
            f"{'timed out' if code is grpc.StatusCode.DEADLINE_EXCEEDED else 'unavailable'}"
            f"{closed_hint(target, details)}",
            1,
        )
    if code is grpc.StatusCode.INVALID_ARGUMENT:
        return CliError(details or "invalid request", 2)
    if code is grpc.StatusCode.UNAUTHENTICATED:
        return CliError(f"not signed in to the rota scheduler: {details}", 1)
    if code is grpc.StatusCode.PERMISSION_DENIED:
        return CliError(f"permission denied: {details}", 1)
    return CliError(details or str(code), 1)


def _tls_failure(details: str | None) -> bool:
    text = (details or "").lower()
    return any(word in text for word in ("ssl", "handshake", "certificate", "tls"))
