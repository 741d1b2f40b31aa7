"""Runs job attempts as Docker containers with exactly their GPUs, and watches them.

A container stays until the scheduler acknowledges its final report, so a report lost with a
connection is sent again; its output is kept in a file per attempt (``output.py``). Each
attempt's state is an ``attempts.Attempt``; the engine's arguments and labels are built in
``engine_args.py``, the client and what the engine supports in ``engine_client.py``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docker.errors import APIError, DockerException, NotFound

from rota.agent.runtime import workplace
from rota.agent.runtime.attempts import Attempt, AttemptTable, Phase
from rota.agent.runtime.base import EngineHealth, ReportFn
from rota.agent.runtime.engine_args import (
    ENGINE_DOWN,
    LABEL_AGENT,
    LABEL_ATTEMPT,
    LABEL_DISPLAY,
    LABEL_GPUS,
    LABEL_JOB,
    LABEL_LIMIT,
    LABEL_NODE,
    LABEL_SIGNAL,
    create_args,
    engine_message,
    ensure_image,
    image_path,
    parse_time,
    short,
)
from rota.agent.runtime.engine_client import default_network, new_client, resolve_gpu_mode
from rota.agent.runtime.identity import agent_id
from rota.agent.runtime.mounts import MountStager
from rota.agent.runtime.output import OutputSaver
from rota.agent.runtime.policy import ContainerPolicy
from rota.agent.runtime.sessions import SessionHandle, SessionOpen, open_session
from rota.agent.runtime.signals import Warner, warning_time
from rota.agent.steps.node import NodeSteps
from rota.agent.steps.tasks import Target
from rota.inputs import SpecError
from rota.messages import AgentEvent, EventKind, KillOrder, LaunchOrder, RunningAttempt

log = logging.getLogger("rota.agent")
KILLED = 137  # a container's exit code when SIGKILL ended it (a memory kill among others)
OOM_SETTLE = 0.5  # seconds before such a container's state is looked at again


class DockerRuntime:
    """The ``ContainerRuntime`` over the Docker engine. Thread-safe: each attempt's state
    changes under its own lock (``Attempt``); a worker thread per attempt launches and watches
    it, one more follows its output and one stops it.

    ``report`` receives every event; ``clock`` gives Unix seconds (event times, time limits);
    ``sleep`` waits between retries while the engine does not answer.
    ``max_output``: bytes kept of an attempt's output in its log and in each of its output files.
    ``steps``: the srun steps of this node's jobs (their spools, tasks and sruns).
    """

    def __init__(
        self,
        node: str,
        data_dir: Path,
        report: ReportFn,
        clock: Callable[[], float],
        gpu_mode: str = "auto",
        base_url: str | None = None,
        network: str = "",
        kill_grace: float = 10.0,
        policy: ContainerPolicy | None = None,
        max_output: int = 1 << 30,
        sleep: Callable[[float], None] = time.sleep,
        steps: NodeSteps | None = None,
    ) -> None:
        self.node = node
        self.agent_id = agent_id(data_dir)  # whose containers are ours (identity.py)
        self.steps = steps or NodeSteps(data_dir / "steps", node, base_url)
        self.policy = policy or ContainerPolicy()
        log_dir = data_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.output = OutputSaver(log_dir, max_output, node, self._spawn)
        self.mounts = MountStager(data_dir / "mounts")  # bind sources, opened without a race
        self._report = report
        self._clock = clock
        self._sleep = sleep
        self._client = new_client(base_url, timeout=60)
        self._probe = new_client(base_url, timeout=3)  # health pings answer fast or count as down
        self._warner = Warner(self._client, clock, sleep)
        self._kill_grace = kill_grace
        self._table = AttemptTable()
        self.gpu_mode = resolve_gpu_mode(self._client, gpu_mode)
        self.network = network or default_network(self._client)

    # ------------------------------------------------------------------ state

    def health(self) -> EngineHealth:
        """Ping the engine with a short timeout."""
        try:
            self._probe.ping()
        except Exception as exc:  # any failure to answer means unhealthy
            return EngineHealth(False, f"container engine not answering: {short(exc)}")
        return EngineHealth(True)

    def attempts(self) -> list[RunningAttempt]:
        """Attempts this agent holds: running, or ended with a report not yet acknowledged."""
        return self._table.views()

    def gpu_jobs(self) -> dict[int, str]:
        """Host GPU index -> display id of the attempt holding it (launching or running)."""
        return self._table.gpu_jobs()

    def container_info(self, container_id: str) -> tuple[int, str] | None:
        """(host pid of the container's init process, job display id); None when it is gone
        or is another agent's (``identity``: its processes belong to none of our jobs).

        Used to map GPU processes to jobs (``owners.ProcessOwners``).
        """
        try:
            attrs = self._probe.api.inspect_container(container_id)
        except (DockerException, *ENGINE_DOWN):
            return None
        labels = attrs.get("Config", {}).get("Labels") or {}
        if labels.get(LABEL_AGENT, self.agent_id) != self.agent_id:
            return None
        display = labels.get(LABEL_DISPLAY) or labels.get(LABEL_JOB, "")
        return int(attrs.get("State", {}).get("Pid") or 0), display

    def finals(self) -> list[AgentEvent]:
        """Final reports not yet acknowledged (sent again after a reconnect)."""
        return self._table.finals()

    def is_running(self, job_id: int, attempt: int) -> bool:
        return self._table.phase(job_id, attempt) is Phase.RUNNING

    def is_pending(self, job_id: int, attempt: int) -> bool:
        """True while the attempt is being launched (no container running or ended yet)."""
        return self._table.phase(job_id, attempt) is Phase.LAUNCHING

    def log_path(self, job_id: int, attempt: int) -> Path:
        return self.output.log_path(job_id, attempt)

    def open_session(self, request: SessionOpen) -> SessionHandle:
        """An interactive session in the running attempt's container (``sessions``)."""
        att = self._table.get(request.job_id, request.attempt)
        running = att is not None and att.phase is Phase.RUNNING
        container_id = att.container_id if att is not None and running else ""
        return open_session(self._client.api, container_id, request, self.node)

    # ------------------------------------------------------------------ adopt

    def adopt(self) -> None:
        """Take over this agent's containers left by an earlier process of it: those with its
        node name and its id (``identity``), or with its node name and no id (started by an
        older agent, which labelled none), never another agent's of the same node name.

        Running ones are watched with their original deadlines; ended ones are reported with
        their real exit codes.
        """
        containers = self._client.containers.list(
            all=True, filters={"label": f"{LABEL_NODE}={self.node}"}
        )
        for container in containers:
            labels = container.labels
            if labels.get(LABEL_AGENT, self.agent_id) != self.agent_id:
                continue  # another agent's, on the same engine with the same node name
            att = Attempt(
                int(labels[LABEL_JOB]),
                int(labels[LABEL_ATTEMPT]),
                labels.get(LABEL_DISPLAY, ""),
                tuple(int(i) for i in labels.get(LABEL_GPUS, "").split(",") if i.isdigit()),
            )
            att.created(container.id)
            att.signal = labels.get(LABEL_SIGNAL, "")
            if self._table.claim(att) is not None:
                continue
            state = container.attrs.get("State", {})
            if state.get("Running"):
                started = parse_time(state.get("StartedAt", ""))
                limit = float(labels.get(LABEL_LIMIT, "0") or 0)
                att.started(started + limit if limit and started else 0.0)
                log.info(
                    "adopted running job %s attempt %d",
                    labels.get(LABEL_DISPLAY),
                    att.attempt,
                    extra={"job": labels.get(LABEL_DISPLAY), "attempt": att.attempt},
                )
                target = Target(container.id, att.gpus, self.gpu_mode, started, att.deadline)
                self.steps.started(att.job_id, att.attempt, target)
                self._spawn(self._watch, att)
            elif state.get("Status") == "created":
                self._remove(att)  # never started: the scheduler sends the launch again
                self._table.drop(att)
            else:
                self._spawn(self._finish, att)

    # ------------------------------------------------------------------ launch

    def launch(self, order: LaunchOrder) -> None:
        """Start the attempt on a worker thread (a second order for it is ignored)."""
        att = Attempt(order.job_id, order.attempt, order.display_id, order.gpu_indices)
        att.signal = order.spec.signal
        existing = self._table.claim(att)
        if existing is not None:
            if (final := existing.final) is not None:
                self._report(final)
            return
        self._spawn(self._launch_or_fail, order, att)

    def _launch_or_fail(self, order: LaunchOrder, att: Attempt) -> None:
        """``_launch``; an unexpected error before the container runs fails the attempt with
        its reason (the scheduler frees its GPUs), one while it runs is logged and the attempt
        is reported when its container ends."""
        try:
            self._launch(order, att)
        except Exception as exc:  # the launch thread reports every attempt it took
            log.exception(
                "job %d attempt %d: unexpected error",
                att.job_id,
                att.attempt,
                extra={"job": att.job_id, "attempt": att.attempt},
            )
            phase = att.phase
            if phase is Phase.RUNNING:
                self._finish(att)
            elif phase is Phase.LAUNCHING:
                self._fail(att, f"node {self.node} could not start it: {short(exc)}")

    def _launch(self, order: LaunchOrder, att: Attempt) -> None:
        try:
            place = workplace.prepare(order, self.node, self.policy, self.mounts, _stage_key(att))
        except SpecError as exc:
            self._fail(att, f"refused by node {self.node}: {exc}")
            return
        try:
            ensure_image(self._client, order.spec)
            args = create_args(
                order,
                place.mounts,
                self.node,
                self.policy,
                self.gpu_mode,
                self.network,
                place.who,
                place.workdir,
                place.home,
                self.agent_id,
            )
            args["labels"].update(place.files.labels())
            self.steps.prepare(
                order, args, place.who.uid, place.who.gid, lambda i: image_path(self._client, i)
            )
            if args.get("device_requests"):
                log.info(
                    "job %s attempt %d: GPUs %s passed as an nvidia DeviceRequest",
                    order.display_id,
                    order.attempt,
                    ",".join(order.gpu_uuids),
                    extra={"job": order.display_id, "attempt": order.attempt},
                )
            container = self._client.containers.create(**args)
        except ENGINE_DOWN as exc:
            self._fail(att, f"container engine not answering: {short(exc)}", engine_fault=True)
            return
        except (APIError, DockerException) as exc:
            self._fail(att, engine_message(exc))
            return
        att.created(container.id)
        try:
            container.start()
        except (APIError, DockerException, *ENGINE_DOWN) as exc:
            engine_down = isinstance(exc, ENGINE_DOWN)
            self._remove(att)
            self._fail(att, engine_message(exc), engine_fault=engine_down)
            return
        self.mounts.release(_stage_key(att))  # the started container keeps its own copy
        now = self._clock()
        att.started(now + order.time_limit if order.time_limit else 0.0)
        if att.stop_kind is not None:  # ordered while launching, when there was nothing to stop
            fenced = att.stop_kind is EventKind.LOST  # it may run elsewhere soon: no grace
            self._spawn(self._stop, att, 0.0 if fenced else self._kill_grace)
        target = Target(container.id, att.gpus, self.gpu_mode, now, att.deadline)
        self.steps.started(att.job_id, att.attempt, target)
        notes = "; ".join(place.notes)
        self._report(
            AgentEvent(att.job_id, att.attempt, EventKind.STARTED, message=notes, time=now)
        )
        self._watch(att)

    def _fail(self, att: Attempt, message: str, engine_fault: bool = False) -> None:
        self.mounts.release(_stage_key(att))
        report = AgentEvent(
            att.job_id,
            att.attempt,
            EventKind.LAUNCH_FAILED,
            message=message,
            time=self._clock(),
            engine_fault=engine_fault,
        )
        att.end(report)
        self.steps.ended(att.job_id, att.attempt)
        log.warning(
            "job %d attempt %d could not start: %s",
            att.job_id,
            att.attempt,
            message,
            extra={"job": att.job_id, "attempt": att.attempt},
        )
        self._report(report)

    # ------------------------------------------------------------------ watch

    def _watch(self, att: Attempt) -> None:
        """Follow output, warn and enforce the deadline, then report how the attempt ended."""
        follower = self._spawn(self._follow_logs, att)
        deadline = att.deadline
        warn = warning_time(deadline, att.signal)
        while True:
            warn = self._warner.send_due(att, warn)  # None once sent
            remaining = deadline - self._clock() if deadline else 3600.0
            remaining = min(remaining, warn[1] - self._clock()) if warn else remaining
            if deadline and remaining <= 0 and att.stop(EventKind.TIMED_OUT):
                self.steps.time_limit(att.job_id, att.attempt)
                self._spawn(self._stop, att, self._kill_grace)
                remaining = self._kill_grace + 5
            try:
                self._client.containers.get(att.container_id).wait(timeout=max(remaining, 0.5))
                break
            except NotFound:
                break
            except ENGINE_DOWN:
                if deadline and self._clock() < deadline:
                    self._sleep(0.5)
                continue
            except (APIError, DockerException):
                self._sleep(1.0)
        follower.join(timeout=5)
        self._finish(att)

    def _follow_logs(self, att: Attempt) -> None:
        try:
            container = self._client.containers.get(att.container_id)
        except (DockerException, *ENGINE_DOWN):
            return  # the whole output is fetched again when the attempt ends
        self.output.follow(att.job_id, att.attempt, container)

    def _finish(self, att: Attempt) -> None:
        """Save the complete output, then report the end (kept until acknowledged)."""
        while True:
            try:
                container = self._client.containers.get(att.container_id)
                state = container.attrs.get("State", {})
                if state.get("Running"):
                    container.wait()
                    continue
                notes = self.output.save(att.job_id, att.attempt, container)
                if (
                    state.get("ExitCode") == KILLED
                    and not state.get("OOMKilled")
                    and not att.stop_kind
                ):
                    state = self._settled(container, state)
                break
            except NotFound:
                report = AgentEvent(
                    att.job_id,
                    att.attempt,
                    EventKind.LOST,
                    message="container disappeared",
                    time=self._clock(),
                )
                self._complete(att, report)
                return
            except (DockerException, *ENGINE_DOWN):
                self._sleep(1.0)
        code = int(state.get("ExitCode", 0) or 0)
        report = AgentEvent(
            att.job_id,
            att.attempt,
            att.stop_kind or EventKind.EXITED,
            exit_code=code,
            oom_killed=bool(state.get("OOMKilled")),
            message="; ".join(filter(None, [att.stop_reason or state.get("Error", ""), *notes])),
            time=parse_time(state.get("FinishedAt", "")) or self._clock(),
        )
        self._complete(att, report)

    def _settled(self, container: Any, state: dict[str, Any]) -> dict[str, Any]:
        """The state of a container SIGKILLed by no order of ours, looked at again after
        ``OOM_SETTLE`` s: the engine may hear of a memory kill after the exit it caused
        (containerd's shims sent the OOM event after the exit event) and mark ``OOMKilled``
        only then."""
        self._sleep(OOM_SETTLE)
        try:
            container.reload()
        except (DockerException, *ENGINE_DOWN):
            return state
        return container.attrs.get("State", {}) or state

    def _complete(self, att: Attempt, report: AgentEvent) -> None:
        att.end(report)
        self.steps.ended(att.job_id, att.attempt)
        self._report(report)

    # ------------------------------------------------------------------ stop

    def kill(self, order: KillOrder) -> None:
        """Stop an attempt: SIGTERM, ``grace`` seconds, SIGKILL; reported as KILLED."""
        att = self._table.get(order.job_id, order.attempt)
        if att is None:
            self._report(
                AgentEvent(
                    order.job_id,
                    order.attempt,
                    EventKind.LOST,
                    message="no container for this attempt",
                    time=self._clock(),
                )
            )
            return
        if (final := att.final) is not None:
            self._report(final)
            return
        att.stop(EventKind.KILLED)  # unless already stopping as TIMED_OUT or LOST
        self._spawn(self._warner.then_stop, att, order, self._stop)

    def _stop(self, att: Attempt, grace: float) -> None:
        while container_id := att.container_id:
            try:
                self._client.containers.get(container_id).stop(timeout=int(max(grace, 0)))
                return
            except NotFound:
                return
            except (DockerException, *ENGINE_DOWN):
                self._sleep(1.0)

    def fence(self, reason: str, grace: float) -> None:
        """Stop every attempt because this node lost the scheduler; they are reported LOST
        (the scheduler ends them NODE_FAIL and requeues those that allow it). One launching
        now is stopped without grace once started (``_start``)."""
        for att in self._table.in_phase(Phase.LAUNCHING, Phase.RUNNING):
            if att.stop(EventKind.LOST, f"fenced: {reason}") and att.phase is Phase.RUNNING:
                self._spawn(self._stop, att, grace)

    def fence_kill(self) -> int:
        """SIGKILL the container of every attempt not ended, whatever stop is under way (its
        grace may outlast the fence's); how many were running."""
        killed = 0
        for att in self._table.in_phase(Phase.LAUNCHING, Phase.RUNNING):
            container_id = att.container_id
            if not container_id:
                continue
            try:
                self._client.containers.get(container_id).kill()
                killed += 1
            except (DockerException, *ENGINE_DOWN) as exc:  # not running, gone, engine down
                log.info("SIGKILL to %s: %s", container_id[:12], short(exc))
        return killed

    def keep_only(self, keep: set[tuple[int, int]]) -> None:
        """After a (re)connect: stop running attempts the scheduler does not list."""
        for att in self._table.strays(keep):
            log.warning(
                "stopping job %d attempt %d: the scheduler no longer runs it here",
                att.job_id,
                att.attempt,
                extra={"job": att.job_id, "attempt": att.attempt},
            )
            self.kill(
                KillOrder(att.job_id, att.attempt, "not kept by the scheduler", self._kill_grace)
            )

    def ack(self, job_id: int, attempt: int) -> None:
        """The scheduler recorded the final report: remove the container (output stays)."""
        att = self._table.ack(job_id, attempt)
        if att is not None:
            self._remove(att)

    def _remove(self, att: Attempt) -> None:
        if not (container_id := att.container_id):
            return
        try:
            self._client.containers.get(container_id).remove(force=True)
        except NotFound:
            pass
        except (DockerException, *ENGINE_DOWN) as exc:
            log.warning(
                "could not remove container of job %d attempt %d: %s",
                att.job_id,
                att.attempt,
                short(exc),
                extra={"job": att.job_id, "attempt": att.attempt},
            )

    def close(self) -> None:
        self._client.close()
        self._probe.close()

    @staticmethod
    def _spawn(target: Callable[..., None], *args: Any) -> threading.Thread:
        thread = threading.Thread(target=_logged, args=(target, *args), daemon=True)
        thread.start()
        return thread


def _logged(target: Callable[..., None], *args: Any) -> None:
    """Run a worker thread's ``target``; an error escaping it is logged, not lost."""
    try:
        target(*args)
    except Exception:
        log.exception("agent worker %s failed", getattr(target, "__name__", target))


def _stage_key(att: Attempt) -> str:
    return f"{att.job_id}-{att.attempt}"
