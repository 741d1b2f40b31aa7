"""Every request is normalised, then validated, before any servicer sees it: one gRPC
interceptor.

The shape of every unary and server-streaming request (``rota.inputs.check_message``), then
per method: the ids, page tokens and reasons of the job RPCs, and the admin RPCs like the
users' (node names as agents register, labels, user names, uids/gids). A SubmitJobs request's
items and job specs are not checked here but once, behind every door, by the submission itself
(``core.submission.check_items``, called by ``JobsFacade.submit``). Names and flags are
normalised in the request itself (stripped; reservation flags upper-cased: ``normal_flags``)
before anything checks a permission, so the value checked is the value stored. A bad request
is answered INVALID_ARGUMENT naming the field and what is allowed, and nothing is changed. The
agent stream is not walked here: its messages are the node's reports, checked where they are
applied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from rota.inputs import (
    MAX_REASON,
    SpecError,
    check_account,
    check_host_id,
    check_job_ids,
    check_labels,
    check_message,
    check_name,
    check_node_name,
    check_number,
    check_page_token,
    check_text,
    normal_flags,
    normal_name,
    normal_names,
)
from rota.scheduler.api.intercept import HandlerInterceptor
from rota.scheduler.cluster.reservation import FLAGS, UNUSED_POLICIES
from rota.v1 import rota_pb2 as pb
from rota.validate import Rules

_JOBS = "/rota.v1.JobService/"
_BOOKINGS = "/rota.v1.ReservationService/"
_ADMIN = "/rota.v1.AdminService/"
_USERS = "/rota.v1.UserService/"
_GPUS = "/rota.v1.GpuService/"
_PARTITIONS = "/rota.v1.PartitionService/"


def _submit(req: pb.SubmitJobsRequest, rules: Rules) -> None:
    """The request's ``user`` only: its items are checked by the submission (module doc)."""
    check_name("user", req.user)


def _list(req: pb.ListJobsRequest, rules: Rules) -> None:
    _filters(req, rules)
    req.page_token = normal_name(req.page_token)
    check_page_token("page_token", req.page_token)


def _filters(
    req: pb.ListJobsRequest | pb.AccountingFilter, rules: Rules, steps: bool = False
) -> None:
    check_job_ids("ids", req.ids, rules.max_ids_per_request, steps)
    for name in ("users", "accounts"):
        values = getattr(req, name)
        if len(values) > rules.max_ids_per_request:
            raise SpecError(name, f"at most {rules.max_ids_per_request} are allowed")
        for i, value in enumerate(values):
            (check_account if name == "accounts" else check_name)(f"{name}[{i}]", value)


def _act(req: pb.CancelJobsRequest | pb.ControlJobsRequest, rules: Rules) -> None:
    check_job_ids("ids", req.ids, rules.max_ids_per_request)
    check_name("user", req.user)
    if isinstance(req, pb.CancelJobsRequest):
        check_text("reason", req.reason, MAX_REASON)


def _accounting(req: pb.AccountingFilter, rules: Rules) -> None:
    _filters(req, rules, steps=True)
    check_name("user", req.user)
    check_number("start", req.start, 0, 1e11)
    check_number("end", req.end, 0, 1e11)


def _one(req: Any, rules: Rules) -> None:
    check_job_ids("id", [req.id], rules.max_ids_per_request)


def _set(field: Any, values: tuple[str, ...]) -> None:
    """Replace the items of a repeated string field."""
    del field[:]
    field.extend(values)


def _normal_booking(req: pb.CreateReservationRequest) -> None:
    """Strip the booking's names and upper-case its flags, in the request itself."""
    req.name = normal_name(req.name)
    req.gpu_type = normal_name(req.gpu_type)
    for name in ("nodes", "users", "accounts"):
        _set(getattr(req, name), normal_names(getattr(req, name)))
    _set(req.flags, normal_flags(req.flags))


def _check_booking(req: pb.CreateReservationRequest, where: str) -> None:
    for i, node in enumerate(req.nodes):
        check_node_name(f"{where}nodes[{i}]", node)
    for name in ("users", "accounts"):
        for i, value in enumerate(getattr(req, name)):
            (check_account if name == "accounts" else check_name)(f"{where}{name}[{i}]", value)
    for i, flag in enumerate(req.flags):
        if flag not in FLAGS:
            raise SpecError(
                f"{where}flags[{i}]", f"unknown flag {flag[:40]!r}; allowed: {', '.join(FLAGS)}"
            )
    if req.unused and req.unused not in UNUSED_POLICIES:
        allowed = ", ".join(UNUSED_POLICIES)
        raise SpecError(f"{where}unused", f"{req.unused[:40]!r} is not one of {allowed}")


def _create_booking(req: pb.CreateReservationRequest, rules: Rules) -> None:
    _normal_booking(req)
    _check_booking(req, "")


def _update_booking(req: pb.UpdateReservationRequest, rules: Rules) -> None:
    req.name = normal_name(req.name)
    _set(req.fields, normal_names(req.fields))
    _normal_booking(req.changes)
    _check_booking(req.changes, "changes.")


def _import_bookings(req: pb.ImportReservationsRequest, rules: Rules) -> None:
    """Normalised only: a bad row is refused on its own (``skip_bad``) by the service."""
    for row in req.rows:
        _normal_booking(row)


def _named(req: Any, rules: Rules) -> None:
    req.name = normal_name(req.name)


def _partition(req: Any, rules: Rules) -> None:
    """The partition's name; its fields are checked by ``core.partitions``."""
    req.name = normal_name(req.name)
    check_name("name", req.name)


def _node(req: Any, rules: Rules) -> None:
    req.name = normal_name(req.name)
    check_node_name("name", req.name)
    if isinstance(req, pb.AddNodeRequest):
        check_labels("labels", req.labels)
    if isinstance(req, pb.DrainNodeRequest):
        check_text("reason", req.reason, MAX_REASON)


def _gpu(req: pb.GpuActionRequest, rules: Rules) -> None:
    req.node = normal_name(req.node)
    check_node_name("node", req.node)
    check_text("reason", req.reason, MAX_REASON)


def _user_name(req: Any, rules: Rules) -> None:
    req.name = normal_name(req.name)
    if not req.name:
        raise SpecError("name", "a user name is required")
    check_name("name", req.name)


def _user_accounts(req: pb.AddUserRequest | pb.UpdateUserRequest) -> None:
    """Normalise and check a user request's ``accounts`` and ``default_account``."""
    _set(req.accounts, normal_names(req.accounts))
    for i, account in enumerate(req.accounts):
        check_account(f"accounts[{i}]", account)
    req.default_account = normal_name(req.default_account)
    check_account("default_account", req.default_account)


def _add_user(req: pb.AddUserRequest, rules: Rules) -> None:
    _user_name(req, rules)
    _user_accounts(req)
    for name in ("uid", "gid"):
        value = getattr(req, name)
        if value != -1:  # -1: unset
            check_host_id(name, value)


def _update_user(req: pb.UpdateUserRequest, rules: Rules) -> None:
    _user_name(req, rules)
    _user_accounts(req)
    if req.set_ids and (req.uid == -1) != (req.gid == -1):
        raise SpecError("uid, gid", "give both or neither (-1 and -1 clear them)")
    for name in ("uid", "gid"):
        value = getattr(req, name)
        if value != -1:  # -1: unset
            check_host_id(name, value)


_CHECKS: dict[str, Callable[[Any, Rules], None]] = {
    _JOBS + "SubmitJobs": _submit,
    _JOBS + "ListJobs": _list,
    _JOBS + "CancelJobs": _act,
    _JOBS + "ControlJobs": _act,
    _JOBS + "GetJob": _one,
    _JOBS + "StreamLogs": _one,
    _JOBS + "ExplainJob": _one,
    "/rota.v1.AccountingService/ListFinished": _accounting,
    "/rota.v1.AccountingService/Summary": _accounting,
    _BOOKINGS + "CreateReservation": _create_booking,
    _BOOKINGS + "UpdateReservation": _update_booking,
    _BOOKINGS + "ImportReservations": _import_bookings,
    _BOOKINGS + "GetReservation": _named,
    _BOOKINGS + "DeleteReservation": _named,
    _ADMIN + "AddNode": _node,
    _ADMIN + "DrainNode": _node,
    _ADMIN + "ResumeNode": _node,
    _ADMIN + "RemoveNode": _node,
    _GPUS + "DrainGpu": _gpu,
    _PARTITIONS + "AddPartition": _partition,
    _PARTITIONS + "UpdatePartition": _partition,
    _PARTITIONS + "RemovePartition": _partition,
    _GPUS + "ResumeGpu": _gpu,
    _USERS + "AddUser": _add_user,
    _USERS + "UpdateUser": _update_user,
    _USERS + "RevokeUser": _user_name,
    _USERS + "NewToken": _user_name,
}


def problem(method: str, request: Any, rules: Rules) -> str:
    """Why ``request`` to ``method`` is refused; "" when it is acceptable. Normalises the
    request's names and flags in place first (what the servicer then sees)."""
    try:
        check_message(request)
        check = _CHECKS.get(method)
        if check is not None:
            check(request, rules)
    except SpecError as exc:
        return str(exc)
    return ""


class ValidationInterceptor(HandlerInterceptor):
    """Answers INVALID_ARGUMENT for a request that ``problem`` refuses."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules

    def wraps(self, method: str, handler: grpc.RpcMethodHandler) -> bool:
        # rota's own RPCs only: the standard services (health, reflection) stream by
        # context.write, which a wrapping async generator would break
        return method.startswith("/rota.")

    async def enter(
        self, prepared: Any, method: str, request: Any, context: grpc.aio.ServicerContext
    ) -> None:
        refused = problem(method, request, self.rules)
        if refused:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refused)
