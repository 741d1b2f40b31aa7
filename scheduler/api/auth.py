"""Every RPC carries a user token: one interceptor turns it into the caller's principal.

``authorization: Bearer TOKEN`` metadata names the user; the principal (user, admin flag,
accounts) is then what ``caller()`` returns inside the servicer, whatever a request's ``user``
field says. No or a wrong token: UNAUTHENTICATED. This interceptor only authenticates: what a
principal may do (admin-only nodes, GPUs, users, tokens and the audit log among it) is decided
by ``core.authz``, which the engine asks on every call. Answered without a token: gRPC health and reflection; the agent stream authenticates with its node's
token instead (``AgentService/Connect``).

The audit log gets every refused request (UNAUTHENTICATED or PERMISSION_DENIED, from here or
from a servicer) and every admin's request that changes something but a submission: who, what,
which target, when, from which peer address.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from typing import Any

import grpc

from rota.scheduler.api.intercept import HandlerInterceptor
from rota.scheduler.cluster.users import AuditEntry, Principal
from rota.scheduler.core.errors import AuthError, token_refusal
from rota.scheduler.engine import Engine

log = logging.getLogger("rota.scheduler")

# the principal of the request being served (set per call by AuthInterceptor)
_PRINCIPAL: contextvars.ContextVar[Principal] = contextvars.ContextVar("rota_principal")

OPEN_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
AGENT_STREAM = "/rota.v1.AgentService/Connect"
SUBMIT = "/rota.v1.JobService/SubmitJobs"  # an admin's own jobs use no admin power: not audited
READ_ONLY = {
    "/rota.v1.JobService/ListJobs",
    "/rota.v1.JobService/GetJob",
    "/rota.v1.JobService/StreamLogs",
    "/rota.v1.JobService/ExplainJob",
    "/rota.v1.NodeService/ListNodes",
    "/rota.v1.NodeService/GetNode",
    "/rota.v1.PartitionService/ListPartitions",
    "/rota.v1.UserService/ListUsers",
    "/rota.v1.UserService/ListAudit",
    "/rota.v1.UserService/WhoAmI",
    "/rota.v1.AccountingService/ListFinished",
    "/rota.v1.AccountingService/Summary",
    "/rota.v1.ReservationService/ListReservations",
    "/rota.v1.ReservationService/GetReservation",
}
REFUSED = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
_TARGET_FIELDS = ("ids", "id", "name", "node", "index", "action", "reason")


def caller() -> Principal:
    """The principal of the request being served; AuthError outside an authenticated call."""
    try:
        return _PRINCIPAL.get()
    except LookupError:
        raise AuthError("no user token was checked for this call") from None


def bearer_token(metadata: Any) -> str:
    """The token of ``authorization: Bearer TOKEN`` metadata ("" when absent)."""
    for key, value in metadata or ():
        if key == "authorization" and isinstance(value, str):
            scheme, _, token = value.partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return ""


def target_of(request: Any) -> str:
    """What a request names, for the audit log (ids, node, user name, ...; never a job's
    environment)."""
    parts: list[str] = []
    if request is None:  # a bidirectional call: its target is in the audit entries it makes
        return ""
    for name in _TARGET_FIELDS:
        if name in getattr(type(request), "DESCRIPTOR", None).fields_by_name:  # type: ignore[union-attr]
            value = getattr(request, name)
            if isinstance(value, str | int) and value != "":
                parts.append(f"{name}={value}")
            elif not isinstance(value, str | int) and len(value):
                parts.append(f"{name}={','.join(str(v) for v in value)}")
    return " ".join(parts)[:1024]


class AuthInterceptor(HandlerInterceptor):
    """Authenticates each call and records refusals and admin actions (see module doc); what
    a principal may do is the engine's to decide (``core.authz``)."""

    def __init__(self, engine: Engine, clock: Callable[[], float]) -> None:
        self.engine = engine
        self.clock = clock

    def wraps(self, method: str, handler: grpc.RpcMethodHandler) -> bool:
        if method == AGENT_STREAM or method.startswith(OPEN_PREFIXES):
            return False
        if handler.request_streaming and handler.stream_stream is None:
            raise TypeError(f"{method}: client-streaming calls other than the agent stream")
        return True

    def wraps_bidi(self, method: str) -> bool:
        """Every bidirectional call but the agent stream carries a user token (interactive
        sessions)."""
        return method != AGENT_STREAM and not method.startswith(OPEN_PREFIXES)

    async def prepare(self, details: grpc.HandlerCallDetails) -> Principal | None:
        """The caller's principal; None without a current token."""
        token = bearer_token(details.invocation_metadata)
        if not token:
            return None
        return self.engine.users.authenticate(token) or await self.engine.users.load_principal(
            token
        )

    async def enter(
        self,
        prepared: Principal | None,
        method: str,
        request: Any,
        context: grpc.aio.ServicerContext,
    ) -> Principal:
        if prepared is None:
            why = token_refusal(bearer_token(context.invocation_metadata()))
            await self._audit(method, None, request, context, grpc.StatusCode.UNAUTHENTICATED, why)
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, why)
        assert prepared is not None
        _PRINCIPAL.set(prepared)
        return prepared

    async def leave(
        self,
        entered: Principal,
        method: str,
        request: Any,
        context: grpc.aio.ServicerContext,
        failed: BaseException | None,
    ) -> None:
        code = context.code()
        if code in REFUSED:
            await self._audit(method, entered, request, context, code, context.details() or "")
        elif failed is None and entered.admin and method not in READ_ONLY and method != SUBMIT:
            await self._audit(method, entered, request, context, None, "")

    async def _audit(
        self,
        method: str,
        who: Principal | None,
        request: Any,
        context: grpc.aio.ServicerContext,
        code: grpc.StatusCode | None,
        detail: str,
    ) -> None:
        entry = AuditEntry(
            time=self.clock(),
            user=who.user if who is not None else "",
            action=method.removeprefix("/rota.v1."),
            target=target_of(request),
            peer=context.peer() or "",
            allowed=code is None,
            detail=f"{code.name}: {detail}" if code is not None else detail,
        )
        try:
            await self.engine.users.record(entry)
        except Exception:
            log.exception("could not record an audit entry: %s", entry)
