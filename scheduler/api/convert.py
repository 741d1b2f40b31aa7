"""protobuf <-> domain conversion for the scheduler: jobs for clients, the wire model
(``rota.messages``) for agents (nodes for clients: ``convert_nodes``). With the servicers that
receive them, the only scheduler modules that import generated code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rota.jobspec import JobSpec
from rota.jobview import shown_reason
from rota.messages import (
    AgentEvent,
    AgentOrder,
    EventAck,
    EventKind,
    Heartbeat,
    Hello,
    Inventory,
    JobCommand,
    JobCommandReply,
    JobRequeue,
    KillOrder,
    LaunchOrder,
    LogData,
    Pong,
    SessionInput,
    SessionOpen,
    SessionOutput,
    StepCancel,
    StepEnd,
    StepLaunch,
    StepLayout,
    StepOutput,
    StepStart,
    Welcome,
)
from rota.scheduler.cluster.model import JobEvent, JobRecord
from rota.scheduler.core.errors import UserError
from rota.scheduler.policy import reasons
from rota.scheduler.policy.explain import Explanation
from rota.states import JobState
from rota.v1 import rota_pb2 as pb
from rota.wire import (
    attempt_fields,
    attempts_from_messages,
    inventory_fields,
    inventory_from_message,
    spec_fields,
    spec_from_message,
    telemetry_from_message,
)

_STATE_TO_PB = {s: pb.JobState.Value(s.value) for s in JobState}
_PB_TO_STATE = {v: k for k, v in _STATE_TO_PB.items()}


def state_to_pb(state: JobState) -> Any:  # pb.JobState.ValueType (the stubs are skipped)
    return _STATE_TO_PB[state]


def state_from_pb(value: int) -> JobState:
    if value not in _PB_TO_STATE:
        raise UserError(f"states: {value} is not a job state number")
    return _PB_TO_STATE[value]


def action_from_pb(value: int) -> str:
    """A ``gcontrol`` action by name ("" when unset; the control service names the choices)."""
    if value == pb.CONTROL_ACTION_UNSPECIFIED or value not in pb.ControlAction.values():
        return ""
    return pb.ControlAction.Name(value).lower()


def jobs_to_pb(jobs: Sequence[JobRecord]) -> list[pb.Job]:
    """Messages of many jobs; a spec shared by many (an array's tasks) is converted once."""
    specs: dict[int, pb.JobSpec] = {}
    out = []
    for job in jobs:
        spec = specs.get(id(job.spec))
        if spec is None:
            spec = specs[id(job.spec)] = spec_to_pb(job.spec)
        out.append(job_to_pb(job, spec=spec))
    return out


def job_to_pb(
    job: JobRecord, events: list[JobEvent] | None = None, spec: pb.JobSpec | None = None
) -> pb.Job:
    """The message of one job; ``spec``: its spec's message, when already converted."""
    msg = pb.Job(
        id=job.display_id,
        job_id=job.id,
        array_job_id=job.array_job_id or 0,
        array_task_id=job.array_task_id if job.array_task_id is not None else -1,
        name=job.name,
        user=job.user,
        account=job.account,
        state=state_to_pb(job.state),
        state_code=job.state.code,
        reason=shown_reason(job.state, job.reason, job.warning),
        held=job.held,
        warning=job.warning,
        partition=job.partition,
        has_exit_code=job.exit_code is not None,
        exit_code=job.exit_code or 0,
        attempt=job.attempt,
        nodes=job.node_names,
        gpus=job.spec.gpus,
        submit_time=job.submit_time,
        start_time=job.start_time or 0.0,
        end_time=job.end_time or 0.0,
        time_limit=job.time_limit,
        spec=spec if spec is not None else spec_to_pb(job.spec),
        estimated_start=job.estimated_start or 0.0,
        priority=job.priority or 0.0,
    )
    for alloc in job.allocation:
        msg.gpu_ids[alloc.node].indices.extend(alloc.gpus)
        msg.gpu_ids[alloc.node].uuids.extend(alloc.uuids)
    for ev in events or ():
        msg.events.append(
            pb.JobEvent(
                time=ev.time,
                old_state=ev.old_state,
                new_state=ev.new_state,
                reason=ev.reason,
                attempt=ev.attempt,
                kind=ev.kind.value,
            )
        )
    return msg


def explanation_to_pb(
    job: JobRecord, why: Explanation | None, pending: int = 0
) -> pb.ExplainJobResponse:
    """``gqueue --explain``: the job, and for a pending job its priority and blocking reason."""
    msg = pb.ExplainJobResponse(job=job_to_pb(job))
    if why is None:
        return msg
    reason = why.reason or ""
    msg.pending = True
    msg.policy = why.policy
    msg.priority = why.priority
    msg.factors.extend(
        pb.PriorityFactor(name=f.name, value=f.value, weight=f.weight, contribution=f.contribution)
        for f in why.factors
    )
    msg.rank = why.rank
    msg.pending_jobs = pending
    msg.starts_now = why.starts_now
    msg.reason = reason
    msg.reason_detail = why.detail or reasons.describe(reason)
    msg.estimated_start = why.est_start or 0.0
    msg.order_by = why.order_by
    msg.reservation = why.reservation
    msg.attained = why.attained
    return msg


def spec_from_pb(msg: pb.JobSpec) -> JobSpec:
    return spec_from_message(msg)


def spec_to_pb(spec: JobSpec) -> pb.JobSpec:
    return pb.JobSpec(**spec_fields(spec))


def inventory_to_pb(inv: Inventory) -> pb.Inventory:
    return pb.Inventory(**inventory_fields(inv))


def hello_from_pb(msg: pb.Hello) -> Hello:
    return Hello(
        node_name=msg.node_name,
        token=msg.token,
        inventory=inventory_from_message(msg.inventory),
        attempts=attempts_from_messages(msg.attempts),
        address=msg.address,
        agent_version=msg.agent_version,
        dials_forwards=msg.dials_forwards,
        log_windows=msg.log_windows,
    )


def heartbeat_from_pb(msg: pb.Heartbeat) -> Heartbeat:
    return Heartbeat(
        gpus=tuple(telemetry_from_message(t) for t in msg.gpus),
        attempts=attempts_from_messages(msg.attempts),
        engine_healthy=msg.engine_healthy,
        engine_error=msg.engine_error,
        time=msg.time,
    )


def event_from_pb(msg: pb.AgentJobEvent) -> AgentEvent:
    return AgentEvent(
        job_id=msg.job_id,
        attempt=msg.attempt,
        kind=EventKind(pb.JobEventKind.Name(msg.kind)),
        exit_code=msg.exit_code,
        oom_killed=msg.oom_killed,
        message=msg.message,
        time=msg.time,
        engine_fault=msg.engine_fault,
    )


def log_data_from_pb(msg: pb.LogData) -> LogData:
    return LogData(msg.request_id, msg.data, msg.eof, msg.error)


def session_output_from_pb(msg: pb.SessionOutput) -> SessionOutput:
    return SessionOutput(
        msg.request_id,
        msg.stream,
        msg.data,
        msg.ack,
        msg.exited,
        msg.exit_code,
        msg.error,
        msg.dial_error,
        offset=msg.offset,
        detached=msg.detached,
    )


def step_start_from_pb(msg: pb.StepStart) -> StepStart:
    lay = msg.layout
    return StepStart(
        request_id=msg.request_id,
        job_id=msg.job_id,
        attempt=msg.attempt,
        layout=StepLayout(
            lay.nodes,
            lay.ntasks,
            lay.ntasks_per_node,
            lay.gpus_per_task,
            lay.label,
            lay.nodelist,
            lay.kill_on_bad_exit,
            lay.wait,
        ),
        argv=tuple(msg.argv),
        environment=msg.environment,
        cwd=msg.cwd,
    )


def job_requeue_from_pb(msg: pb.JobRequeue) -> JobRequeue:
    return JobRequeue(msg.job_id, msg.attempt)


def job_command_from_pb(msg: pb.JobCommand) -> JobCommand:
    return JobCommand(
        msg.request_id,
        msg.job_id,
        msg.attempt,
        msg.tool,
        tuple(msg.argv),
        msg.script,
        msg.script_index,
        msg.cwd,
        tuple(sorted(msg.environment.items())),
    )


def step_data_from_pb(msg: pb.AgentMessage) -> StepOutput | StepEnd | StepCancel:
    """A step_output, step_end or step_cancel agent message."""
    kind = msg.WhichOneof("msg")
    if kind == "step_output":
        return StepOutput(msg.step_output.request_id, msg.step_output.data, msg.step_output.stderr)
    if kind == "step_end":
        e = msg.step_end
        return StepEnd(
            e.request_id, e.exit_code, e.error, e.timed_out, 0, e.failed_task, e.reported
        )
    return StepCancel(msg.step_cancel.request_id)


def step_order_to_pb(order: StepLaunch | StepOutput | StepEnd | StepCancel) -> pb.SchedulerMessage:
    if isinstance(order, StepLaunch):
        return pb.SchedulerMessage(
            step_launch=pb.StepLaunch(
                request_id=order.request_id,
                job_id=order.job_id,
                attempt=order.attempt,
                step=order.step,
                node_id=order.node_id,
                nnodes=order.nnodes,
                ntasks=order.ntasks,
                tasks=[
                    pb.StepTask(rank=t.rank, local_id=t.local_id, gpu_indices=list(t.gpu_indices))
                    for t in order.tasks
                ],
                argv=list(order.argv),
                environment=order.environment,
                cwd=order.cwd,
                nodelist=order.nodelist,
                tasks_per_node=order.tasks_per_node,
                label=order.label,
                window=order.window,
                kill_on_bad_exit=order.kill_on_bad_exit,
                wait=order.wait,
            )
        )
    if isinstance(order, StepOutput):
        return pb.SchedulerMessage(
            step_output=pb.StepOutput(
                request_id=order.request_id, data=order.data, stderr=order.stderr, ack=order.ack
            )
        )
    if isinstance(order, StepEnd):
        return pb.SchedulerMessage(
            step_end=pb.StepEnd(
                request_id=order.request_id,
                exit_code=order.exit_code,
                error=order.error,
                timed_out=order.timed_out,
                step=order.step,
                failed_task=order.failed_task,
                reported=order.reported,
            )
        )
    return pb.SchedulerMessage(
        step_cancel=pb.StepCancel(request_id=order.request_id, kill=order.kill, named=order.named)
    )


def order_to_pb(order: AgentOrder) -> pb.SchedulerMessage:
    if isinstance(order, SessionInput):  # the most frequent order of an interactive session
        return pb.SchedulerMessage(
            session_input=pb.SessionInput(
                request_id=order.request_id,
                data=order.data,
                eof=order.eof,
                rows=order.rows,
                cols=order.cols,
                ack=order.ack,
                close=order.close,
            )
        )
    if isinstance(order, SessionOpen):
        return pb.SchedulerMessage(
            session_open=pb.SessionOpen(
                request_id=order.request_id,
                job_id=order.job_id,
                attempt=order.attempt,
                kind=order.kind,
                command=list(order.command),
                tty=order.tty,
                rows=order.rows,
                cols=order.cols,
                port=order.port,
                window=order.window,
                dial_ticket=order.dial_ticket,
                dial_port=order.dial_port,
                reopen=order.reopen,
                replay=order.replay,
                resume_from=order.resume_from,
                dial_tls=order.dial_tls,
            )
        )
    if isinstance(order, LaunchOrder):
        return pb.SchedulerMessage(
            launch=pb.LaunchOrder(
                job_id=order.job_id,
                attempt=order.attempt,
                spec=spec_to_pb(order.spec),
                gpu_indices=list(order.gpu_indices),
                gpu_uuids=list(order.gpu_uuids),
                env=dict(order.env),
                time_limit=order.time_limit,
                display_id=order.display_id,
                host_network=order.host_network,
                user=order.user,
                uid=order.uid,
                gid=order.gid,
                steps_only=order.steps_only,
            )
        )
    if isinstance(order, KillOrder):
        return pb.SchedulerMessage(
            kill=pb.KillOrder(
                job_id=order.job_id,
                attempt=order.attempt,
                reason=order.reason,
                grace=order.grace,
                warn_signal=order.warn_signal,
                warn_seconds=order.warn_seconds,
            )
        )
    if isinstance(order, EventAck):
        return pb.SchedulerMessage(ack=pb.EventAck(job_id=order.job_id, attempt=order.attempt))
    if isinstance(order, Pong):
        return pb.SchedulerMessage(
            pong=pb.Pong(time=order.time, telemetry_period=order.telemetry_period)
        )
    if isinstance(order, Welcome):
        return pb.SchedulerMessage(
            welcome=pb.Welcome(
                heartbeat_interval=order.heartbeat_interval,
                keep=[pb.AttemptStatus(**attempt_fields(a)) for a in order.keep],
                node_grace=order.node_grace,
                telemetry_period=order.telemetry_period,
                keepalive_interval=order.keepalive_interval,
                node_timeout=order.node_timeout,
            )
        )
    if isinstance(order, StepLaunch | StepOutput | StepEnd | StepCancel):
        return step_order_to_pb(order)
    if isinstance(order, JobCommandReply):
        return pb.SchedulerMessage(
            job_command_reply=pb.JobCommandReply(
                request_id=order.request_id,
                exit_code=order.exit_code,
                output=order.output,
                error=order.error,
                wait_for=order.wait_for,
                ended=order.ended,
            )
        )
    return pb.SchedulerMessage(
        log_request=pb.LogRequest(
            request_id=order.request_id,
            job_id=order.job_id,
            attempt=order.attempt,
            follow=order.follow,
            cancel=order.cancel,
            window=order.window,
            ack=order.ack,
        )
    )
