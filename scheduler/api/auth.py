"""Every RPC carries a user token: one interceptor turns it into the caller's principal.

``authorization: Bearer TOKEN`` metadata names the user; the principal (user, admin flag,
accounts) is then what ``caller()`` returns inside the servicer, whatever a request's ``user``
field says. No or a wrong token: UNAUTHENTICATED. Admin-only services (nodes, GPUs, users,
tokens, the audit log; not ``WhoAmI``) answer PERMISSION_DENIED to others before any servicer
runs. Answered
without a token: gRPC health and reflection; the agent stream authenticates with its node's
token instead (``AgentService/Connect``).

The audit log gets every refused request (UNAUTHENTICATED or PERMISSION_DENIED, from here or
from a servicer) and every admin's request that changes something but a submission: who, what,
which target, when, from which peer address.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from rota.scheduler.cluster.users import AuditEntry, Principal
from rota.scheduler.core import access
from rota.scheduler.core.errors import AuthError
from rota.scheduler.engine import Engine

log = logging.getLogger("rota.scheduler")

# the principal of the request being served (set per call by AuthInterceptor)
_PRINCIPAL: contextvars.ContextVar[Principal] = contextvars.ContextVar("rota_principal")

OPEN_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
AGENT_STREAM = "/rota.v1.AgentService/Connect"
SUBMIT = "/rota.v1.JobService/SubmitJobs"  # an admin's own jobs use no admin power: not audited
WHO_AM_I = "/rota.v1.UserService/WhoAmI"  # every user may ask who their token makes them
ADMIN_SERVICES = {
    "/rota.v1.AdminService/": "managing nodes",
    "/rota.v1.GpuService/": "managing GPUs",
    "/rota.v1.UserService/": "managing users, tokens and the audit log",
}
READ_ONLY = {
    "/rota.v1.JobService/ListJobs",
    "/rota.v1.JobService/GetJob",
    "/rota.v1.JobService/WatchJob",
    "/rota.v1.JobService/StreamLogs",
    "/rota.v1.JobService/ExplainJob",
    "/rota.v1.NodeService/ListNodes",
    "/rota.v1.NodeService/GetNode",
    "/rota.v1.UserService/ListUsers",
    "/rota.v1.UserService/ListAudit",
    WHO_AM_I,
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
    parts = []
    for name in _TARGET_FIELDS:
        if name in getattr(type(request), "DESCRIPTOR", None).fields_by_name:  # type: ignore[union-attr]
            value = getattr(request, name)
            if isinstance(value, str | int) and value != "":
                parts.append(f"{name}={value}")
            elif not isinstance(value, str | int) and len(value):
                parts.append(f"{name}={','.join(str(v) for v in value)}")
    return " ".join(parts)[:1024]


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Authenticates each call and records refusals and admin actions (see module doc)."""

    def __init__(self, engine: Engine, clock: Callable[[], float]) -> None:
        self.engine = engine
        self.clock = clock

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        handler = await continuation(handler_call_details)
        if handler is None or method == AGENT_STREAM or method.startswith(OPEN_PREFIXES):
            return handler
        token = bearer_token(handler_call_details.invocation_metadata)
        who = None
        if token:
            who = self.engine.authenticate(token) or await self.engine.load_principal(token)
        refusal = (grpc.StatusCode.UNAUTHENTICATED, _no_token(token)) if who is None else None
        if who is not None:
            area = next((w for p, w in ADMIN_SERVICES.items() if method.startswith(p)), "")
            area = "" if method == WHO_AM_I else area
            why = access.may_administer(who, area) if area else ""
            if why:
                refusal = (grpc.StatusCode.PERMISSION_DENIED, why)
        return self._wrap(handler, method, who, refusal)

    def _wrap(
        self,
        handler: grpc.RpcMethodHandler,
        method: str,
        who: Principal | None,
        refusal: tuple[grpc.StatusCode, str] | None,
    ) -> grpc.RpcMethodHandler:
        audit = self._audit

        async def guard(request: Any, context: grpc.aio.ServicerContext) -> None:
            if refusal is not None:
                await audit(method, who, request, context, refusal[0], refusal[1])
                await context.abort(*refusal)
            assert who is not None
            _PRINCIPAL.set(who)

        async def finish(request: Any, context: grpc.aio.ServicerContext, ok: bool) -> None:
            assert who is not None
            code = context.code()
            if code in REFUSED:
                await audit(method, who, request, context, code, context.details() or "")
            elif ok and who.admin and method not in READ_ONLY and method != SUBMIT:
                await audit(method, who, request, context, None, "")

        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                await guard(request, context)
                ok = False
                try:
                    reply = await inner(request, context)
                    ok = True
                    return reply
                finally:
                    await finish(request, context, ok)

            return grpc.unary_unary_rpc_method_handler(
                unary, handler.request_deserializer, handler.response_serializer
            )
        if handler.unary_stream is not None:
            inner_stream = handler.unary_stream

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                await guard(request, context)
                ok = False
                try:
                    async for item in inner_stream(request, context):
                        yield item
                    ok = True
                finally:
                    await finish(request, context, ok)

            return grpc.unary_stream_rpc_method_handler(
                stream, handler.request_deserializer, handler.response_serializer
            )
        raise TypeError(f"{method}: client-streaming calls other than the agent stream")

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
            await self.engine.record(entry)
        except Exception:
            log.exception("could not record an audit entry: %s", entry)


def _no_token(token: str) -> str:
    if not token:
        return (
            "no user token: set ROTA_TOKEN or ~/.config/rota/credentials "
            "(an admin makes one with `gadmin user add`)"
        )
    return "the user token is not valid (wrong, replaced or revoked)"
