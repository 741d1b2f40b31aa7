"""gRPC servicers (grpc.aio): translate protobuf <-> domain and call one Engine method each.

Domain errors become status codes in ``api.errors`` (the ``unary``/``streaming`` wrappers).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import grpc

from rota.scheduler.agent_hub import AgentSession
from rota.scheduler.api import convert, convert_nodes
from rota.scheduler.api.accounting import AccountingServicer
from rota.scheduler.api.admin import AdminServicer
from rota.scheduler.api.auth import caller
from rota.scheduler.api.errors import streaming, unary
from rota.scheduler.api.gpus import GpuServicer
from rota.scheduler.api.interactive import InteractiveServicer
from rota.scheduler.api.partitions import PartitionServicer
from rota.scheduler.api.peers import node_certificate_problem
from rota.scheduler.api.reservations import ReservationServicer, add_bookings
from rota.scheduler.api.users import UserServicer
from rota.scheduler.core.errors import AuthError, UserError
from rota.scheduler.core.jobs import JobListing, SubmitItem
from rota.scheduler.core.mail import submission_warnings
from rota.scheduler.engine import Engine
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc

log = logging.getLogger("rota.scheduler")
INLINE_NODES = 50  # ListNodes pages up to this size are converted on the event loop


class JobServicer(pb_grpc.JobServiceServicer):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @unary
    async def SubmitJobs(
        self, request: pb.SubmitJobsRequest, context: Any
    ) -> pb.SubmitJobsResponse:
        items = [
            SubmitItem(convert.spec_from_pb(i.spec), i.client_request_id, i.source)
            for i in request.items
        ]
        results = await self.engine.jobs.submit(items, caller(), request.test_only)
        warned = submission_warnings(results, items, self.engine.services.config.mail_relay)
        return pb.SubmitJobsResponse(
            jobs=[
                pb.SubmittedJob(
                    client_request_id=r.client_request_id,
                    job_ids=list(r.job_ids),
                    duplicate=r.duplicate,
                    reason=r.reason,
                    warnings=warnings,
                )
                for r, warnings in zip(results, warned, strict=True)
            ]
        )

    @unary
    async def GetJob(self, request: pb.GetJobRequest, context: Any) -> pb.Job:
        job, events = await self.engine.jobs.get_job(request.id, caller())
        return convert.job_to_pb(job, events)

    @unary
    async def ListJobs(self, request: pb.ListJobsRequest, context: Any) -> pb.ListJobsResponse:
        listing = JobListing(
            states=tuple(convert.state_from_pb(s) for s in request.states),
            all_states=request.all_states,
            ids=tuple(request.ids),
            users=tuple(request.users),
            accounts=tuple(request.accounts),
            page_size=request.page_size,
            page_token=request.page_token,
            with_priority=request.with_priority,
            with_steps=request.with_steps,
        )
        page = await self.engine.jobs.list_jobs(listing, caller())
        jobs = await asyncio.to_thread(convert.jobs_to_pb, page.jobs)  # the loop keeps serving
        steps = [
            pb.RunningStep(
                id=s.id,
                job_id=s.id.rpartition(".")[0],
                name=s.name,
                nodelist=s.nodelist,
                ntasks=s.ntasks,
                start_time=s.start,
            )
            for s in page.steps
        ]
        return pb.ListJobsResponse(jobs=jobs, next_page_token=page.next_page_token, steps=steps)

    @unary
    async def CancelJobs(
        self, request: pb.CancelJobsRequest, context: Any
    ) -> pb.CancelJobsResponse:
        results = await self.engine.jobs.cancel(list(request.ids), caller(), request.reason)
        return pb.CancelJobsResponse(
            results=[pb.CancelResult(id=r.id, ok=r.ok, message=r.message) for r in results]
        )

    @unary
    async def ControlJobs(
        self, request: pb.ControlJobsRequest, context: Any
    ) -> pb.ControlJobsResponse:
        results = await self.engine.jobs.control(
            convert.action_from_pb(request.action), list(request.ids), caller()
        )
        return pb.ControlJobsResponse(
            results=[pb.CancelResult(id=r.id, ok=r.ok, message=r.message) for r in results]
        )

    @streaming
    async def StreamLogs(
        self, request: pb.StreamLogsRequest, context: Any
    ) -> AsyncGenerator[pb.LogChunk, None]:
        stream = self.engine.jobs.stream_logs(
            request.id, request.attempt, request.follow, caller(), request.node
        )
        try:
            async for data in stream:
                yield pb.LogChunk(data=data)
        finally:
            await stream.aclose()

    @unary
    async def ExplainJob(
        self, request: pb.ExplainJobRequest, context: Any
    ) -> pb.ExplainJobResponse:
        job, why, pending = await self.engine.jobs.explain(request.id, caller())
        return convert.explanation_to_pb(job, why, pending)


class NodeServicer(pb_grpc.NodeServiceServicer):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._parts = convert_nodes.NodeParts()  # nodes' static message parts, across listings

    @unary
    async def ListNodes(self, request: pb.ListNodesRequest, context: Any) -> pb.ListNodesResponse:
        page = await self.engine.nodes.list_nodes(
            request.page_size,
            request.page_token,
            request.summary,
            request.summary_only,
            tuple(request.states),
        )
        convert_page = functools.partial(
            convert_nodes.node_page_to_pb, page.nodes, page.next_page_token, self._parts
        )
        if len(page.nodes) > INLINE_NODES:  # ~0.1 ms a node: the loop keeps serving meanwhile
            reply = await asyncio.to_thread(convert_page)
        else:  # a thread hop would cost more than it saves when the core thread holds the GIL
            reply = convert_page()
        if reply.nodes:
            booked = await self.engine.nodes.node_bookings([n.name for n in reply.nodes])
            for msg in reply.nodes:
                add_bookings(msg, booked.get(msg.name))
        convert_nodes.add_partitions(reply, page.partitions)
        if page.summary is not None:
            reply.summary.CopyFrom(convert_nodes.node_summary_to_pb(page.summary))
        return reply

    @unary
    async def GetNode(self, request: pb.GetNodeRequest, context: Any) -> pb.Node:
        msg = convert_nodes.node_to_pb(*await self.engine.nodes.get_node(request.name), self._parts)
        add_bookings(msg, (await self.engine.nodes.node_bookings([msg.name])).get(msg.name))
        return msg


class AgentServicer(pb_grpc.AgentServiceServicer):
    """One bidirectional stream per agent: hello first, then heartbeats, events and log data."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @streaming
    async def Connect(
        self, request_iterator: AsyncIterator[pb.AgentMessage], context: Any
    ) -> AsyncGenerator[pb.SchedulerMessage, None]:
        first = await anext(request_iterator, None)
        if first is None or first.WhichOneof("msg") != "hello":
            raise UserError("the first agent message must be a hello")
        refused = node_certificate_problem(context, first.hello.node_name)
        if refused:
            raise AuthError(refused)
        hello = convert.hello_from_pb(first.hello)
        session = await self.engine.agents.agent_connect(hello, context.peer() or "")
        reader = asyncio.create_task(self._read(session, request_iterator))
        try:
            while True:
                order = await session.outbox.get()
                if order is None:
                    return
                yield convert.order_to_pb(order)
                self.engine.agents.agent_sent(session, order)  # the stream took it
        finally:
            reader.cancel()
            await self.engine.agents.agent_gone(session)

    async def _read(
        self, session: AgentSession, request_iterator: AsyncIterator[pb.AgentMessage]
    ) -> None:
        engine = self.engine
        handlers: dict[str, Callable[[pb.AgentMessage], None]] = {
            "heartbeat": lambda m: engine.agents.agent_heartbeat(
                session, functools.partial(convert.heartbeat_from_pb, m.heartbeat)
            ),
            "job_event": lambda m: engine.agents.agent_event(
                session, convert.event_from_pb(m.job_event)
            ),
            "keepalive": lambda m: engine.agents.agent_keepalive(session),
            "log_data": lambda m: engine.agents.agent_log_data(
                session, convert.log_data_from_pb(m.log_data)
            ),
            "session_output": lambda m: engine.agents.agent_session_output(
                session, convert.session_output_from_pb(m.session_output)
            ),
            "step_start": lambda m: engine.agents.agent_step_start(
                session, convert.step_start_from_pb(m.step_start)
            ),
            "job_requeue": lambda m: engine.agents.agent_job_requeue(
                session, convert.job_requeue_from_pb(m.job_requeue)
            ),
            "job_command": lambda m: engine.agents.agent_job_command(
                session, convert.job_command_from_pb(m.job_command)
            ),
        }
        for kind in ("step_output", "step_end", "step_cancel"):
            handlers[kind] = lambda m: engine.agents.agent_step_data(
                session, convert.step_data_from_pb(m)
            )
        try:
            async for msg in request_iterator:
                kind = msg.WhichOneof("msg")
                handler = handlers.get(kind or "")
                if handler is None:
                    log.warning(
                        "node %s sent an unexpected %s message; ignored", session.node, kind
                    )
                    continue
                handler(msg)  # never waits: the engine buffers what needs the core thread
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("agent stream of node %s failed", session.node)
        finally:
            session.outbox.put_nowait(None)


def add_servicers(server: grpc.aio.Server, engine: Engine) -> None:
    pb_grpc.add_JobServiceServicer_to_server(JobServicer(engine), server)
    pb_grpc.add_AdminServiceServicer_to_server(AdminServicer(engine), server)
    pb_grpc.add_GpuServiceServicer_to_server(GpuServicer(engine), server)
    pb_grpc.add_NodeServiceServicer_to_server(NodeServicer(engine), server)
    pb_grpc.add_AgentServiceServicer_to_server(AgentServicer(engine), server)
    pb_grpc.add_ReservationServiceServicer_to_server(ReservationServicer(engine), server)
    pb_grpc.add_UserServiceServicer_to_server(UserServicer(engine), server)
    pb_grpc.add_PartitionServiceServicer_to_server(PartitionServicer(engine), server)
    pb_grpc.add_AccountingServiceServicer_to_server(AccountingServicer(engine), server)
    pb_grpc.add_InteractiveServiceServicer_to_server(InteractiveServicer(engine), server)
