"""gRPC servicers (grpc.aio): translate protobuf <-> domain and call one Engine method each.

Domain errors map to status codes: UserError -> INVALID_ARGUMENT, NotFound -> NOT_FOUND,
AuthError -> UNAUTHENTICATED. Messages are one line naming the problem.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from rota.jobspec import SpecError
from rota.scheduler.api import convert
from rota.scheduler.core import AuthError, NotFound, SubmitItem, UserError
from rota.scheduler.engine import Engine
from rota.scheduler.store.store import JobQuery
from rota.states import ACTIVE_STATES, JobState
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from rota.wire import spec_from_pb

log = logging.getLogger("rota.scheduler")
T = TypeVar("T")
_DEFAULT_STATES = (JobState.PENDING, *ACTIVE_STATES)
MAX_PAGE_SIZE = 2_000  # jobs per ListJobs answer at most; clients follow next_page_token


async def _guard(context: grpc.aio.ServicerContext, work: Awaitable[T]) -> T:
    """Await ``work``, turning domain errors into gRPC status codes."""
    try:
        return await work
    except (UserError, SpecError, ValueError) as exc:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    except NotFound as exc:
        await context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
    except AuthError as exc:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
    raise AssertionError("unreachable")


class JobServicer(pb_grpc.JobServiceServicer):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def SubmitJobs(
        self, request: pb.SubmitJobsRequest, context: Any
    ) -> pb.SubmitJobsResponse:
        items = [
            SubmitItem(spec_from_pb(i.spec), i.client_request_id, i.source) for i in request.items
        ]
        user = request.user or "unknown"
        results = await _guard(context, self.engine.submit(items, user, request.test_only))
        return pb.SubmitJobsResponse(
            jobs=[
                pb.SubmittedJob(
                    client_request_id=r.client_request_id,
                    job_ids=list(r.job_ids),
                    duplicate=r.duplicate,
                    reason=r.reason,
                )
                for r in results
            ]
        )

    async def GetJob(self, request: pb.GetJobRequest, context: Any) -> pb.Job:
        job, events = await _guard(context, self.engine.get_job(request.id))
        return convert.job_to_pb(job, events)

    async def ListJobs(self, request: pb.ListJobsRequest, context: Any) -> pb.ListJobsResponse:
        if request.all_states:
            states: tuple[JobState, ...] = ()
        elif request.states:
            states = tuple(convert.state_from_pb(s) for s in request.states)
        else:
            states = _DEFAULT_STATES
        after = int(request.page_token) if request.page_token.isdigit() else 0
        limit = min(request.page_size or MAX_PAGE_SIZE, MAX_PAGE_SIZE)
        query = JobQuery(
            states=states,
            users=tuple(request.users),
            accounts=tuple(request.accounts),
            after_id=after,
            limit=limit,
        )
        jobs = await _guard(context, self.engine.list_jobs(query, list(request.ids)))
        token = str(jobs[-1].id) if len(jobs) == limit else ""
        msgs = await asyncio.to_thread(convert.jobs_to_pb, jobs)  # the event loop keeps serving
        return pb.ListJobsResponse(jobs=msgs, next_page_token=token)

    async def CancelJobs(
        self, request: pb.CancelJobsRequest, context: Any
    ) -> pb.CancelJobsResponse:
        results = await _guard(
            context,
            self.engine.cancel(list(request.ids), request.user or "unknown", request.reason),
        )
        return pb.CancelJobsResponse(
            results=[pb.CancelResult(id=r.id, ok=r.ok, message=r.message) for r in results]
        )

    async def ControlJobs(
        self, request: pb.ControlJobsRequest, context: Any
    ) -> pb.ControlJobsResponse:
        if request.action == pb.CONTROL_ACTION_UNSPECIFIED:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no action given")
        action = pb.ControlAction.Name(request.action).lower()
        results = await _guard(
            context, self.engine.control(action, list(request.ids), request.user or "unknown")
        )
        return pb.ControlJobsResponse(
            results=[pb.CancelResult(id=r.id, ok=r.ok, message=r.message) for r in results]
        )

    async def WatchJob(self, request: pb.WatchJobRequest, context: Any) -> AsyncIterator[pb.Job]:
        last = None
        while True:
            job, _events = await _guard(context, self.engine.get_job(request.id))
            msg = convert.job_to_pb(job)
            if msg != last:
                yield msg
                last = msg
            if job.state.terminal:
                return
            await asyncio.sleep(0.25)

    async def StreamLogs(
        self, request: pb.StreamLogsRequest, context: Any
    ) -> AsyncIterator[pb.LogChunk]:
        stream = self.engine.stream_logs(request.id, request.attempt, request.follow, request.node)
        try:
            while True:
                data = await _guard(context, anext(stream))
                yield pb.LogChunk(data=data)
        except StopAsyncIteration:
            return
        finally:
            await stream.aclose()

    async def ExplainJob(
        self, request: pb.ExplainJobRequest, context: Any
    ) -> pb.ExplainJobResponse:
        job, why, pending = await _guard(context, self.engine.explain(request.id))
        return convert.explanation_to_pb(job, why, pending)


class NodeServicer(pb_grpc.NodeServiceServicer):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def ListNodes(self, request: pb.ListNodesRequest, context: Any) -> pb.ListNodesResponse:
        nodes = await self.engine.list_nodes()
        return pb.ListNodesResponse(nodes=[convert.node_to_pb(n, s) for n, s in nodes])

    async def GetNode(self, request: pb.GetNodeRequest, context: Any) -> pb.Node:
        for node, status in await self.engine.list_nodes():
            if node.name == request.name:
                return convert.node_to_pb(node, status)
        await context.abort(grpc.StatusCode.NOT_FOUND, f"node {request.name!r} is not registered")
        raise AssertionError("unreachable")


class AgentServicer(pb_grpc.AgentServiceServicer):
    """One bidirectional stream per agent: hello first, then heartbeats, events and log data."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def Connect(
        self, request_iterator: AsyncIterator[pb.AgentMessage], context: Any
    ) -> AsyncIterator[pb.SchedulerMessage]:
        first = await anext(request_iterator, None)
        if first is None or first.WhichOneof("msg") != "hello":
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "the first agent message must be a hello"
            )
            return
        session = await _guard(
            context, self.engine.agent_connect(convert.hello_from_pb(first.hello))
        )
        reader = asyncio.create_task(self._read(session, request_iterator))
        try:
            while True:
                order = await session.outbox.get()
                if order is None:
                    return
                yield convert.order_to_pb(order)
        finally:
            reader.cancel()
            await self.engine.agent_gone(session)

    async def _read(self, session: Any, request_iterator: AsyncIterator[pb.AgentMessage]) -> None:
        handlers: dict[str, Callable[[pb.AgentMessage], Awaitable[None] | None]] = {
            "heartbeat": lambda m: self.engine.agent_heartbeat(
                session, convert.heartbeat_from_pb(m.heartbeat)
            ),
            "job_event": lambda m: self.engine.agent_event(
                session, convert.event_from_pb(m.job_event)
            ),
            "log_data": lambda m: self.engine.agent_log_data(convert.log_data_from_pb(m.log_data)),
        }
        try:
            async for msg in request_iterator:
                kind = msg.WhichOneof("msg")
                handler = handlers.get(kind or "")
                if handler is None:
                    log.warning(
                        "node %s sent an unexpected %s message; ignored", session.node, kind
                    )
                    continue
                result = handler(msg)
                if result is not None:
                    await result
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("agent stream of node %s failed", session.node)
        finally:
            session.outbox.put_nowait(None)


def add_servicers(server: grpc.aio.Server, engine: Engine) -> None:
    from rota.scheduler.api.admin import add_admin_servicer  # it imports _guard from here
    from rota.scheduler.api.gpus import add_gpu_servicer  # likewise

    pb_grpc.add_JobServiceServicer_to_server(JobServicer(engine), server)
    add_admin_servicer(server, engine)
    add_gpu_servicer(server, engine)
    pb_grpc.add_NodeServiceServicer_to_server(NodeServicer(engine), server)
    pb_grpc.add_AgentServiceServicer_to_server(AgentServicer(engine), server)
