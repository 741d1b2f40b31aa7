"""``gacct``: finished jobs with their NVML figures, and totals per user and account."""

from __future__ import annotations

from typing import Any

from rota.scheduler.api.auth import caller
from rota.scheduler.api.convert import state_from_pb, state_to_pb
from rota.scheduler.api.errors import unary
from rota.scheduler.cluster.accounting import (
    AccountingQuery,
    FinishedJob,
    StepRow,
    UsageTotal,
    parse_display_ids,
)
from rota.scheduler.core.errors import UserError
from rota.scheduler.engine import Engine
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc


def query_from_pb(request: pb.AccountingFilter) -> AccountingQuery:
    """The query of a filter (whose jobs the caller sees is the engine's: ``authz``)."""
    whole = tuple(i.strip() for i in request.ids if "." not in i)
    steps = tuple(i.strip() for i in request.ids if "." in i)
    for step in steps:
        if not step.rpartition(".")[2].isdigit():
            raise UserError(f"ids: {step!r} is not a step id (123.0 or 123_4.0)")
    try:
        ids, tasks = parse_display_ids([*whole, *(s.rpartition(".")[0] for s in steps)])
    except ValueError as exc:
        raise UserError(str(exc)) from None
    states = tuple(state_from_pb(s) for s in request.states)
    active = [s.value for s in states if not s.terminal]
    if active:
        raise UserError(f"states: {', '.join(active)} is not a final state")
    if request.start and request.end and request.end < request.start:
        raise UserError("end: must not be before start")
    return AccountingQuery(
        start=request.start,
        end=request.end,
        ids=ids,
        array_ids=ids,
        tasks=tasks,
        users=tuple(request.users),
        accounts=tuple(request.accounts),
        states=states,
        limit=request.limit,
        steps=steps,
        whole=whole,
    )


def finished_to_pb(row: FinishedJob | StepRow) -> pb.FinishedJob:
    if isinstance(row, StepRow):
        return _step_to_pb(row)
    job, usage = row.job, row.usage
    return pb.FinishedJob(
        id=job.display_id,
        name=job.name,
        user=job.user,
        account=job.account,
        state=state_to_pb(job.state),
        has_exit_code=job.exit_code is not None,
        exit_code=job.exit_code or 0,
        submit_time=job.submit_time,
        start_time=job.start_time or 0.0,
        end_time=job.end_time or 0.0,
        elapsed=row.elapsed,
        gpus=row.gpus,
        gpu_hours=row.gpu_hours,
        nodes=job.node_names,
        reservation=job.spec.reservation,
        gpu_utilization=usage.mean_utilization,
        gpu_memory_peak=usage.memory_peak,
        gpu_memory_total=usage.memory_total,
        gpu_samples=usage.samples,
        reason=job.reason,
    )


def _step_to_pb(row: StepRow) -> pb.FinishedJob:
    """A step's line: its id, command, state, exit code, times and nodes (no GPU figures)."""
    job = row.job
    return pb.FinishedJob(
        id=row.display_id,
        name=row.command[:200],
        user=job.user,
        account=job.account,
        state=state_to_pb(row.state),
        has_exit_code=row.exit_code is not None,
        exit_code=row.exit_code or 0,
        submit_time=row.start,
        start_time=row.start,
        end_time=row.end,
        elapsed=max(0.0, row.end - row.start) if row.end else 0.0,
        nodes=list(row.nodes),
    )


def _total(t: UsageTotal) -> pb.UsageTotal:
    return pb.UsageTotal(
        name=t.name,
        jobs=t.jobs,
        gpu_hours=t.gpu_hours,
        gpu_utilization=t.mean_utilization,
        gpu_samples=t.samples,
        booked_unused_gpu_hours=t.booked_unused,
    )


class AccountingServicer(pb_grpc.AccountingServiceServicer):
    """Admins see every finished job and every total; other users only their own jobs, in the
    listing and in the totals."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @unary
    async def ListFinished(
        self, request: pb.AccountingFilter, context: Any
    ) -> pb.ListFinishedResponse:
        rows = await self.engine.jobs.list_accounting(query_from_pb(request), caller())
        return pb.ListFinishedResponse(jobs=[finished_to_pb(r) for r in rows])

    @unary
    async def Summary(self, request: pb.AccountingFilter, context: Any) -> pb.SummaryResponse:
        users, accounts = await self.engine.jobs.usage_summary(query_from_pb(request), caller())
        return pb.SummaryResponse(
            users=[_total(t) for t in users],
            accounts=[_total(t) for t in accounts],
            start=request.start,
            end=request.end,
        )
