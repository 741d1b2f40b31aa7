"""Every request is validated before any servicer sees it: one gRPC interceptor.

The shape of every unary and server-streaming request (``rota.validate.check_message``), then
per method: the job specs of SubmitJobs (``check_spec`` with the cluster's rules: array size,
mounts, images), and the ids and reasons of the job RPCs. A bad request is answered
INVALID_ARGUMENT naming the field, and nothing is changed. The agent stream is not walked here:
its messages are the node's reports, checked where they are applied.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from rota.scheduler.api.convert import spec_from_pb
from rota.v1 import rota_pb2 as pb
from rota.validate import (
    MAX_REASON,
    Rules,
    SpecError,
    check_job_ids,
    check_message,
    check_name,
    check_number,
    check_spec,
    check_text,
)

_JOBS = "/rota.v1.JobService/"


def _submit(req: pb.SubmitJobsRequest, rules: Rules) -> None:
    if len(req.items) > rules.max_jobs_per_submit:
        raise SpecError(
            "items",
            f"{len(req.items)} jobs in one request; at most {rules.max_jobs_per_submit} "
            "(scheduler setting max_jobs_per_submit)",
        )
    check_name("user", req.user)
    for i, item in enumerate(req.items):
        check_text(f"items[{i}].client_request_id", item.client_request_id, 128)
        where = f"{item.source}: " if item.source else f"items[{i}].spec."
        check_spec(spec_from_pb(item.spec), rules, where)


def _list(req: pb.ListJobsRequest, rules: Rules) -> None:
    _filters(req, rules)
    if req.page_token and not req.page_token.isdigit():
        raise SpecError("page_token", "must be a token from an earlier ListJobs answer")


def _filters(req: pb.ListJobsRequest | pb.AccountingFilter, rules: Rules) -> None:
    check_job_ids("ids", req.ids, rules)
    for name in ("users", "accounts"):
        values = getattr(req, name)
        if len(values) > rules.max_ids_per_request:
            raise SpecError(name, f"at most {rules.max_ids_per_request} are allowed")
        for i, value in enumerate(values):
            check_name(f"{name}[{i}]", value)


def _act(req: pb.CancelJobsRequest | pb.ControlJobsRequest, rules: Rules) -> None:
    check_job_ids("ids", req.ids, rules)
    check_name("user", req.user)
    if isinstance(req, pb.CancelJobsRequest):
        check_text("reason", req.reason, MAX_REASON)


def _accounting(req: pb.AccountingFilter, rules: Rules) -> None:
    _filters(req, rules)
    check_name("user", req.user)
    check_number("start", req.start, 0, 1e11)
    check_number("end", req.end, 0, 1e11)


def _one(req: Any, rules: Rules) -> None:
    check_job_ids("id", [req.id], rules)


_CHECKS: dict[str, Callable[[Any, Rules], None]] = {
    _JOBS + "SubmitJobs": _submit,
    _JOBS + "ListJobs": _list,
    _JOBS + "CancelJobs": _act,
    _JOBS + "ControlJobs": _act,
    _JOBS + "GetJob": _one,
    _JOBS + "WatchJob": _one,
    _JOBS + "StreamLogs": _one,
    _JOBS + "ExplainJob": _one,
    "/rota.v1.AccountingService/ListFinished": _accounting,
    "/rota.v1.AccountingService/Summary": _accounting,
}


def problem(method: str, request: Any, rules: Rules) -> str:
    """Why ``request`` to ``method`` is refused; "" when it is acceptable."""
    try:
        check_message(request)
        check = _CHECKS.get(method)
        if check is not None:
            check(request, rules)
    except SpecError as exc:
        return str(exc)
    return ""


class ValidationInterceptor(grpc.aio.ServerInterceptor):
    """Answers INVALID_ARGUMENT for a request that ``problem`` refuses."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        # rota's own RPCs only: the standard services (health, reflection) stream by
        # context.write, which a wrapping async generator would break
        if handler is None or handler.request_streaming or not method.startswith("/rota."):
            return handler
        rules = self.rules
        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                refused = problem(method, request, rules)
                if refused:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refused)
                return await inner(request, context)

            return grpc.unary_unary_rpc_method_handler(
                unary, handler.request_deserializer, handler.response_serializer
            )
        if handler.unary_stream is not None:
            inner_stream = handler.unary_stream

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                refused = problem(method, request, rules)
                if refused:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refused)
                async for item in inner_stream(request, context):
                    yield item

            return grpc.unary_stream_rpc_method_handler(
                stream, handler.request_deserializer, handler.response_serializer
            )
        return handler
