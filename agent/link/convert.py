"""protobuf <-> wire model (``rota.messages``) for the agent: what it says, and the orders it
receives. With ``stream.py``, the only agent modules that import generated code."""

from __future__ import annotations

from rota.messages import (
    AgentEvent,
    AgentMessage,
    AgentOrder,
    EventAck,
    Heartbeat,
    Hello,
    JobCommand,
    JobCommandReply,
    JobRequeue,
    Keepalive,
    KillOrder,
    LaunchOrder,
    LogRequest,
    Pong,
    SessionInput,
    SessionOpen,
    SessionOutput,
    StepCancel,
    StepEnd,
    StepLaunch,
    StepOutput,
    StepStart,
    StepTask,
    Welcome,
)
from rota.v1 import rota_pb2 as pb
from rota.wire import (
    attempt_fields,
    attempts_from_messages,
    inventory_fields,
    spec_from_message,
    telemetry_fields,
)


def message_to_pb(msg: AgentMessage) -> pb.AgentMessage:
    if isinstance(msg, Hello):
        return pb.AgentMessage(
            hello=pb.Hello(
                node_name=msg.node_name,
                token=msg.token,
                agent_version=msg.agent_version,
                inventory=inventory_fields(msg.inventory),
                attempts=[attempt_fields(a) for a in msg.attempts],
                address=msg.address,
                dials_forwards=msg.dials_forwards,
                log_windows=msg.log_windows,
            )
        )
    if isinstance(msg, Heartbeat):
        return pb.AgentMessage(
            heartbeat=pb.Heartbeat(
                gpus=[telemetry_fields(t) for t in msg.gpus],
                attempts=[attempt_fields(a) for a in msg.attempts],
                engine_healthy=msg.engine_healthy,
                engine_error=msg.engine_error,
                time=msg.time,
            )
        )
    if isinstance(msg, AgentEvent):
        return pb.AgentMessage(
            job_event=pb.AgentJobEvent(
                job_id=msg.job_id,
                attempt=msg.attempt,
                kind=pb.JobEventKind.Value(msg.kind.value),
                exit_code=msg.exit_code,
                oom_killed=msg.oom_killed,
                message=msg.message,
                time=msg.time,
                engine_fault=msg.engine_fault,
            )
        )
    if isinstance(msg, Keepalive):
        return pb.AgentMessage(keepalive=pb.Keepalive())
    if isinstance(msg, SessionOutput):
        return pb.AgentMessage(
            session_output=pb.SessionOutput(
                request_id=msg.request_id,
                stream=msg.stream,
                data=msg.data,
                ack=msg.ack,
                exited=msg.exited,
                exit_code=msg.exit_code,
                error=msg.error,
                dial_error=msg.dial_error,
                offset=msg.offset,
                detached=msg.detached,
            )
        )
    if isinstance(msg, StepStart | StepOutput | StepEnd | StepCancel):
        return _step_to_pb(msg)
    if isinstance(msg, JobRequeue):
        return pb.AgentMessage(job_requeue=pb.JobRequeue(job_id=msg.job_id, attempt=msg.attempt))
    if isinstance(msg, JobCommand):
        return pb.AgentMessage(
            job_command=pb.JobCommand(
                request_id=msg.request_id,
                job_id=msg.job_id,
                attempt=msg.attempt,
                tool=msg.tool,
                argv=list(msg.argv),
                script=msg.script,
                script_index=msg.script_index,
                cwd=msg.cwd,
                environment=dict(msg.environment),
            )
        )
    return pb.AgentMessage(
        log_data=pb.LogData(request_id=msg.request_id, data=msg.data, eof=msg.eof, error=msg.error)
    )


def order_from_pb(msg: pb.SchedulerMessage) -> AgentOrder:
    kind = msg.WhichOneof("msg")
    if kind == "launch":
        o = msg.launch
        return LaunchOrder(
            job_id=o.job_id,
            attempt=o.attempt,
            display_id=o.display_id,
            spec=spec_from_message(o.spec),
            gpu_indices=tuple(o.gpu_indices),
            gpu_uuids=tuple(o.gpu_uuids),
            env=dict(o.env),
            time_limit=o.time_limit,
            host_network=o.host_network,
            user=o.user,
            uid=o.uid if o.HasField("uid") else None,
            gid=o.gid if o.HasField("gid") else None,
            steps_only=o.steps_only,
        )
    if kind == "kill":
        k = msg.kill
        return KillOrder(k.job_id, k.attempt, k.reason, k.grace, k.warn_signal, k.warn_seconds)
    if kind == "ack":
        return EventAck(msg.ack.job_id, msg.ack.attempt)
    if kind == "welcome":
        w = msg.welcome
        return Welcome(
            w.heartbeat_interval,
            attempts_from_messages(w.keep),
            w.node_grace,
            w.telemetry_period,
            w.keepalive_interval,
            w.node_timeout,
        )
    if kind == "pong":
        return Pong(msg.pong.time, msg.pong.telemetry_period)
    if kind == "session_open":
        o = msg.session_open
        return SessionOpen(
            o.request_id,
            o.job_id,
            o.attempt,
            o.kind,
            tuple(o.command),
            o.tty,
            o.rows,
            o.cols,
            o.port,
            o.window,
            o.dial_ticket,
            o.dial_port,
            o.dial_tls,
            o.reopen,
            o.replay,
            o.resume_from,
        )
    if kind == "session_input":
        i = msg.session_input
        return SessionInput(i.request_id, i.data, i.eof, i.rows, i.cols, i.ack, i.close)
    if kind in ("step_launch", "step_output", "step_end", "step_cancel"):
        return _step_order(msg)
    if kind == "job_command_reply":
        c = msg.job_command_reply
        return JobCommandReply(c.request_id, c.exit_code, c.output, c.error, c.wait_for, c.ended)
    r = msg.log_request
    return LogRequest(r.request_id, r.job_id, r.attempt, r.follow, r.cancel, r.window, r.ack)


def _step_to_pb(msg: StepStart | StepOutput | StepEnd | StepCancel) -> pb.AgentMessage:
    if isinstance(msg, StepStart):
        layout = msg.layout
        return pb.AgentMessage(
            step_start=pb.StepStart(
                request_id=msg.request_id,
                job_id=msg.job_id,
                attempt=msg.attempt,
                layout=pb.StepLayout(
                    nodes=layout.nodes,
                    ntasks=layout.ntasks,
                    ntasks_per_node=layout.ntasks_per_node,
                    gpus_per_task=layout.gpus_per_task,
                    label=layout.label,
                    nodelist=layout.nodelist,
                    kill_on_bad_exit=layout.kill_on_bad_exit,
                    wait=layout.wait,
                ),
                argv=list(msg.argv),
                environment=msg.environment,
                cwd=msg.cwd,
            )
        )
    if isinstance(msg, StepOutput):
        return pb.AgentMessage(
            step_output=pb.StepOutput(request_id=msg.request_id, data=msg.data, stderr=msg.stderr)
        )
    if isinstance(msg, StepEnd):
        return pb.AgentMessage(
            step_end=pb.StepEnd(
                request_id=msg.request_id,
                exit_code=msg.exit_code,
                error=msg.error,
                timed_out=msg.timed_out,
                failed_task=msg.failed_task,
                reported=msg.reported,
            )
        )
    return pb.AgentMessage(step_cancel=pb.StepCancel(request_id=msg.request_id))


def _step_order(msg: pb.SchedulerMessage) -> AgentOrder:
    kind = msg.WhichOneof("msg")
    if kind == "step_launch":
        o = msg.step_launch
        return StepLaunch(
            request_id=o.request_id,
            job_id=o.job_id,
            attempt=o.attempt,
            step=o.step,
            node_id=o.node_id,
            nnodes=o.nnodes,
            ntasks=o.ntasks,
            tasks=tuple(StepTask(t.rank, t.local_id, tuple(t.gpu_indices)) for t in o.tasks),
            argv=tuple(o.argv),
            environment=o.environment,
            cwd=o.cwd,
            nodelist=o.nodelist,
            tasks_per_node=o.tasks_per_node,
            label=o.label,
            window=o.window,
            kill_on_bad_exit=o.kill_on_bad_exit,
            wait=o.wait,
        )
    if kind == "step_output":
        out = msg.step_output
        return StepOutput(out.request_id, out.data, out.stderr, out.ack)
    if kind == "step_end":
        e = msg.step_end
        return StepEnd(
            e.request_id, e.exit_code, e.error, e.timed_out, e.step, e.failed_task, e.reported
        )
    cancel = msg.step_cancel
    return StepCancel(cancel.request_id, cancel.kill, cancel.named)
