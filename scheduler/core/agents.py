"""What agents report: hello and reconciliation, heartbeats, job events; lost nodes."""

from __future__ import annotations

import dataclasses
import hmac
import logging
from collections.abc import Callable

from rota.inputs import SpecError, check_node_name
from rota.messages import (
    AgentEvent,
    EventAck,
    Heartbeat,
    Hello,
    RunningAttempt,
    Welcome,
)
from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord, NodeState
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.errors import AuthError
from rota.scheduler.core.lifecycle import Lifecycle, Orders, script_once
from rota.scheduler.core.liveness import Liveness, Stamp, keepalive_interval
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.tokens import hash_token
from rota.scheduler.store.protocols import NodeRepository
from rota.states import ACTIVE_STATES, JobState

log = logging.getLogger("rota.scheduler")

_ENDED = ("EXITED", "KILLED", "TIMED_OUT")  # reports of a container that ran and stopped


class AgentService:
    """The agent side of the life cycle. Each method commits before it returns: new records
    (jobs and nodes) are written, then swapped into the model; a failed write raises and leaves
    the model as it was (a node's liveness fields, never stored, excepted). ``clock`` is the
    wall clock (times shown and stored); silence (``node_timeout``, ``node_grace``) is
    measured on ``monotonic``, so a step of the wall clock never makes a node look lost."""

    def __init__(
        self,
        model: ClusterModel,
        store: NodeRepository,
        lifecycle: Lifecycle,
        liveness: Liveness,
        config: SchedulerConfig,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
    ) -> None:
        self.model = model
        self.store = store
        self.lifecycle = lifecycle
        self.liveness = liveness
        self.config = config
        self.clock = clock
        self.monotonic = monotonic

    def hello(self, hello: Hello, session: int, period: float | None = None) -> Orders:
        """Authenticate a (re)connecting agent, record its inventory, and reconcile attempts.

        The Welcome lists the attempts the agent must keep; it stops every other container.
        Launch orders that were sent but never started are sent again (same attempt).
        ``period`` is the telemetry period the Welcome gives (default: heartbeat_interval).
        """
        life = self.lifecycle
        known = self.model.nodes.get(hello.node_name)
        if known is None:
            if not self.config.open_registration:
                raise AuthError(
                    f"node {hello.node_name!r} is not registered; an admin registers it with "
                    f"`gadmin node add {hello.node_name}`"
                )
            try:
                check_node_name("hello.node_name", hello.node_name)  # as `gadmin node add`
            except SpecError as exc:
                raise AuthError(str(exc)) from None
            node = NodeState(name=hello.node_name, token_hash=hash_token(hello.token))
        elif not known.token_hash:
            if not self.config.open_registration:
                raise AuthError(
                    f"node {hello.node_name!r} has no join token; an admin issues one with "
                    f"`gadmin node add {hello.node_name} --rotate-token`"
                )
            node = dataclasses.replace(known, token_hash=hash_token(hello.token))  # its first
        elif not hmac.compare_digest(known.token_hash, hash_token(hello.token)):
            raise AuthError(
                f"wrong join token for node {hello.node_name!r}; use the token that `gadmin node "
                f"add` printed, or issue a new one with `gadmin node add {hello.node_name} "
                "--rotate-token`"
            )
        else:
            node = dataclasses.replace(known)
        now = self.clock()
        node.inventory = hello.inventory
        node.address = hello.address
        node.connected = True
        node.session = session
        node.last_heartbeat = now
        node.down_since = None
        node.heard, node.grace_from = self.monotonic(), None
        node.engine_healthy = True
        node.attempts = hello.attempts
        self.store.save(node)
        self.model.nodes[node.name] = node
        running = {(a.job_id, a.attempt): a.running for a in hello.attempts}
        keep: list[RunningAttempt] = []
        orders: Orders = []
        changed: list[JobRecord] = []
        events: list[JobEvent] = []
        for job in list(self.model.jobs.values()):
            if job.state not in ACTIVE_STATES or node.name not in job.node_names:
                continue
            job = dataclasses.replace(job)  # committed, then swapped in
            key = (job.id, job.attempt)
            if key in running:
                keep.append(RunningAttempt(job.id, job.attempt))
                if job.state is JobState.CONFIGURING and running[key]:
                    job.start_time = now  # its STARTED report was lost with the old stream
                    events.append(life.transition(job, JobState.RUNNING, f"running on {node.name}"))
                    changed.append(job)
                if job.state is JobState.COMPLETING:
                    orders.extend(
                        (n, o) for n, o in life.kill_orders(job, "stop ordered") if n == node.name
                    )
            elif job.state is JobState.CONFIGURING:
                keep.append(RunningAttempt(job.id, job.attempt))
                orders.extend((n, o) for n, o in life.launch_orders(job) if n == node.name)
            else:
                events.extend(
                    life.attempt_ended(
                        job, JobState.NODE_FAIL, f"container lost on {node.name}", orders
                    )
                )
                changed.append(job)
        self.model.commit(changed, events)
        self.model.bump()
        welcome: Orders = [
            (
                node.name,
                Welcome(
                    self.config.heartbeat_interval,
                    tuple(keep),
                    self.config.node_grace,
                    period or self.config.heartbeat_interval,
                    keepalive_interval(self.config),
                    self.config.node_timeout,
                ),
            )
        ]
        log.info("node %s connected with %d GPU(s)", node.name, node.gpu_count)
        return welcome + orders

    def heartbeat(
        self, node_name: str, session: int, beat: Heartbeat, received: Stamp | None = None
    ) -> bool:
        """Record telemetry and engine health as of ``received`` (when the heartbeat arrived;
        default now); True when schedulability changed."""
        node = self.model.nodes.get(node_name)
        if node is None or node.session != session:
            return False
        before = node.schedulable
        node.telemetry = beat.gpus
        at = Stamp(self.clock(), self.monotonic()) if received is None else received
        node.telemetry_time, node.telemetry_heard = at
        _heard_at(node, at)
        node.engine_healthy = beat.engine_healthy
        node.engine_error = beat.engine_error
        node.attempts = beat.attempts
        node.down_since = None
        changed = before != node.schedulable
        if changed:
            self.model.bump()
            log.warning(
                "node %s engine %s%s",
                node_name,
                "healthy" if beat.engine_healthy else "unhealthy: ",
                "" if beat.engine_healthy else beat.engine_error,
            )
        return changed

    def disconnected(self, node_name: str, session: int) -> None:
        """The stream ``session`` of ``node_name`` ended (a newer session is left alone). Its
        ``node_grace`` counts from the last message received, as for a silent node (the agent
        fences itself counting from its last contact too)."""
        node = self.model.nodes.get(node_name)
        if node is None or node.session != session:
            return
        self._merge_seen(node)
        last = node.last_heartbeat or self.clock()
        heard = self.monotonic() if node.heard is None else node.heard
        node = dataclasses.replace(
            node, connected=False, session=0, down_since=last, heard=None, grace_from=heard
        )
        self.store.save(node)
        self.model.nodes[node_name] = node
        self.model.bump()
        log.warning("node %s disconnected", node_name)

    def event(self, node_name: str, session: int, ev: AgentEvent) -> Orders:
        """Apply what an agent reports about one attempt; stale reports only get an ack."""
        node = self.model.nodes.get(node_name)
        if node is None or node.session != session:
            return []
        life = self.lifecycle
        orders: Orders = []
        job = self.model.jobs.get(ev.job_id)
        current = (
            job is not None
            and job.attempt == ev.attempt
            and node_name in job.node_names
            and job.state in ACTIVE_STATES
        )
        if ev.kind != "STARTED":
            orders.append((node_name, EventAck(ev.job_id, ev.attempt)))
        if not current or job is None:
            return orders
        job = dataclasses.replace(job)  # committed, then swapped in (model.commit)
        events: list[JobEvent] = []
        when = ev.time or self.clock()
        if ev.kind == "STARTED":
            if job.state is JobState.CONFIGURING:
                job.start_time = when
                events.append(life.transition(job, JobState.RUNNING, f"started on {node_name}"))
                if ev.message:  # what the node left out: a submit directory, a default output
                    events.append(life.note(job, HistoryKind.INFO, f"on {node_name}: {ev.message}"))
        elif ev.kind == "LAUNCH_FAILED" and ev.engine_fault:
            events.append(life.requeue(job, f"engine on {node_name} failed: {ev.message}"))
        else:
            final, why = self._final_state(job, ev)
            events.extend(self._gang_part_ended(job, node_name, final, why, ev, orders))
        self.model.commit([job], events)
        if ev.kind == "LAUNCH_FAILED" and ev.engine_fault:  # observed, never stored
            node.engine_healthy = False
            node.engine_error = ev.message
        self.model.bump()
        return orders

    def _final_state(self, job: JobRecord, ev: AgentEvent) -> tuple[JobState, str]:
        if job.stop_state and ev.kind in _ENDED:
            return JobState(job.stop_state), job.reason or "stopped"
        if ev.kind == "TIMED_OUT":
            return JobState.TIMEOUT, f"time limit of {job.time_limit:.0f}s reached"
        if ev.kind == "KILLED":
            return JobState.CANCELLED, ev.message or "killed"
        if ev.kind == "LAUNCH_FAILED":
            return JobState.FAILED, ev.message
        if ev.kind == "LOST":
            return JobState.NODE_FAIL, ev.message or "container lost"
        if ev.exit_code == 0:
            return JobState.COMPLETED, ""
        if ev.oom_killed:
            return JobState.OUT_OF_MEMORY, f"out of memory (exit code {ev.exit_code})"
        return JobState.FAILED, f"exit code {ev.exit_code}"

    def _gang_part_ended(
        self,
        job: JobRecord,
        node_name: str,
        final: JobState,
        why: str,
        ev: AgentEvent,
        orders: Orders,
    ) -> list[JobEvent]:
        life = self.lifecycle
        events: list[JobEvent] = []
        if ev.kind == "EXITED" and ev.oom_killed and ev.exit_code == 0:
            text = f"OOMKilled reported on {node_name} but exit code 0"
            events.append(life.note(job, HistoryKind.WARNING, text))
        if ev.kind in ("EXITED", "TIMED_OUT") and ev.message:  # e.g. output cut at max_output
            events.append(life.note(job, HistoryKind.WARNING, f"on {node_name}: {ev.message}"))
        once = script_once(job)  # a batch script: its first node's end is the job's
        first = node_name == job.allocation[0].node
        if ev.kind in _ENDED and (first if once else not job.exit_code):
            job.exit_code = ev.exit_code  # a gang keeps its first non-zero exit code
        if len(job.allocation) > 1:
            done = dict(job.ranks_ended)
            done[node_name] = final
            job.ranks_ended = tuple(done.items())  # on the record: committed, then swapped in
            ends = (first and once) or final is not JobState.COMPLETED
            if ends and job.state is not JobState.COMPLETING:
                where = f"batch script on {node_name}" if first and once else f"rank on {node_name}"
                events.append(
                    life.transition(job, JobState.COMPLETING, f"{where}: {why or final.value}")
                )
                job.stop_state = final.value
                orders.extend((n, o) for n, o in life.kill_orders(job, why) if n not in done)
            if len(done) < len(job.allocation):
                return events
            job.ranks_ended = ()
            worst = next(
                (s for s in done.values() if s is not JobState.COMPLETED), JobState.COMPLETED
            )
            final = JobState(job.stop_state) if job.stop_state else worst
        events.extend(life.attempt_ended(job, final, why, orders))
        return events

    def next_timeout(self) -> float | None:
        """Seconds until the first connected node would have been silent for longer than
        ``node_timeout`` (judged from receipt stamps, on the monotonic clock); None when no
        node is connected."""
        due: float | None = None
        for node in self.model.nodes.values():
            if node.connected and node.heard is not None:
                seen = self.liveness.seen(node.name, node.session)
                last = node.heard if seen is None else max(seen.monotonic, node.heard)
                due = last if due is None else min(due, last)
        return None if due is None else due + self.config.node_timeout - self.monotonic()

    def _merge_seen(self, node: NodeState) -> None:
        """Take the receipt stamp of ``node``'s stream into ``last_heartbeat`` and ``heard``."""
        seen = self.liveness.seen(node.name, node.session)
        if seen is not None:
            _heard_at(node, seen)

    def lost_nodes(self) -> Orders:
        """Mark nodes whose streams went silent DOWN; end the attempts of nodes DOWN past the
        grace period as NODE_FAIL (requeued when allowed). Silence is judged from receipt
        stamps (``Liveness``), so telemetry still waiting for the core thread keeps its node
        alive, and measured on the monotonic clock. When the jobs' commit fails it raises: the
        jobs are as they were (the nodes' liveness, never stored, stays as observed) and the
        next call ends them again."""
        now = self.monotonic()
        orders: Orders = []
        changed: list[JobRecord] = []
        events: list[JobEvent] = []
        ended: dict[int, JobRecord] = {}
        for node in self.model.nodes.values():
            if node.connected:
                self._merge_seen(node)
            if (
                node.connected
                and node.heard is not None
                and now - node.heard > self.config.node_timeout
            ):
                silent = now - node.heard
                node.connected = False
                node.session = 0
                node.down_since = node.last_heartbeat
                node.heard, node.grace_from = None, node.heard
                self.model.bump()
                log.warning("node %s missed heartbeats for %.0fs: DOWN", node.name, silent)
            if (
                node.connected
                or node.grace_from is None
                or now - node.grace_from < self.config.node_grace
            ):
                continue
            why = f"node {node.name} down for more than {self.config.node_grace:.0f}s"
            for job in list(self.model.jobs.values()):
                if job.id in ended or job.state not in ACTIVE_STATES:
                    continue  # ended here on a node before (a gang): once is enough
                if node.name in job.node_names:
                    job = ended[job.id] = dataclasses.replace(job)  # committed, then swapped in
                    events.extend(
                        self.lifecycle.attempt_ended(job, JobState.NODE_FAIL, why, orders)
                    )
                    changed.append(job)
        if changed:
            self.model.commit(changed, events)
            self.model.bump()
        return orders


def _heard_at(node: NodeState, stamp: Stamp) -> None:
    """``node`` was heard from at ``stamp``: it becomes its last heartbeat unless a later one
    (on the monotonic clock: the wall clock may have stepped back) was recorded already."""
    if node.heard is None or stamp.monotonic >= node.heard:
        node.heard, node.last_heartbeat = stamp.monotonic, stamp.wall
