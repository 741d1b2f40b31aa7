"""The scheduler's business logic: submissions, the job life cycle, agents, and plan/apply.

``Core`` owns the in-memory cluster model and the store. Every method runs on one thread (the
engine's core thread), commits before it returns, and returns the orders to send to agents
afterwards, so an order never goes out for a change that was not committed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rota.jobspec import JobSpec, parse_array, parse_dependency
from rota.scheduler.cluster.messages import (
    AgentEvent,
    AgentOrder,
    EventAck,
    Heartbeat,
    Hello,
    KillOrder,
    LaunchOrder,
    RunningAttempt,
    Welcome,
)
from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeAlloc, NodeState
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.policy import Decide, reasons
from rota.scheduler.policy.fit import node_matches
from rota.scheduler.policy.snapshot import (
    Allocation,
    GpuView,
    NodeView,
    PendingJob,
    Plan,
    RunningJob,
    Snapshot,
)
from rota.scheduler.store.store import JobQuery, Store
from rota.states import ACTIVE_STATES, JobState

log = logging.getLogger("rota.scheduler")

Orders = list[tuple[str, AgentOrder]]
LAUNCH_PREFIX = "launch ordered on "  # event reason of a launch; the node list follows


class UserError(Exception):
    """A request that is invalid as sent (maps to INVALID_ARGUMENT)."""


class NotFound(Exception):
    """An id that names nothing (maps to NOT_FOUND)."""


class AuthError(Exception):
    """An agent that may not join (maps to UNAUTHENTICATED)."""


@dataclass(frozen=True, slots=True)
class SubmitItem:
    spec: JobSpec
    client_request_id: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class SubmitResult:
    client_request_id: str
    job_ids: tuple[str, ...]
    duplicate: bool = False
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CancelResult:
    id: str
    ok: bool
    message: str


def hash_token(token: str) -> str:
    """The stored form of a node join token."""
    return hashlib.sha256(token.encode()).hexdigest()


class Core:
    """State and transitions of the scheduler. Not thread-safe: one thread calls it."""

    def __init__(
        self,
        store: Store,
        config: SchedulerConfig,
        clock: Callable[[], float],
        decide: Decide,
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.decide = decide
        self.jobs: dict[int, JobRecord] = {j.id: j for j in store.active_jobs()}
        self.nodes: dict[str, NodeState] = {n.name: n for n in store.nodes()}
        now = clock()
        for node in self.nodes.values():
            node.down_since = now  # no agent is connected until it says hello
        self.version = 0
        self._gang_results: dict[tuple[int, int], dict[str, JobState]] = {}

    # ================================================================ submission

    def submit(
        self, items: Sequence[SubmitItem], user: str, test_only: bool = False
    ) -> list[SubmitResult]:
        """Validate every item against the cluster, then store all of them or none.

        Items whose client request id was seen before return the stored ids (duplicate=True).
        Raises UserError naming the source and field of the first invalid item.
        """
        known = self.store.known_requests(i.client_request_id for i in items)
        new_items = [i for i in items if i.client_request_id not in known]
        for item in new_items:
            self._check_fits_cluster(item)
        now = self.clock()
        groups = [self._expand(item.spec, user, now) for item in new_items]
        if test_only:
            return [
                self._dry_run(item, group) for item, group in zip(new_items, groups, strict=True)
            ]
        stored = self.store.submit(groups, [i.client_request_id for i in new_items], user)
        by_request: dict[str, list[JobRecord]] = {}
        for item, group in zip(new_items, stored, strict=True):
            for job in group:
                self.jobs[job.id] = job
            by_request[item.client_request_id or f"#{id(item)}"] = group
        self.version += 1
        results = []
        for item in items:
            if item.client_request_id in known:
                ids = tuple(known[item.client_request_id])
                results.append(SubmitResult(item.client_request_id, ids, duplicate=True))
            else:
                group = by_request[item.client_request_id or f"#{id(item)}"]
                results.append(
                    SubmitResult(item.client_request_id, tuple(j.display_id for j in group))
                )
        return results

    def _dry_run(self, item: SubmitItem, group: list[JobRecord]) -> SubmitResult:
        probe = dataclasses.replace(group[0], id=-1)
        snap = self.snapshot(extra=[probe])
        plan = self.decide(snap)
        placed = any(p.job_id == -1 for p in plan.placements)
        reason = "" if placed else plan.reasons.get(-1, reasons.RESOURCES)
        return SubmitResult(item.client_request_id, (), reason=reason)

    def _expand(self, spec: JobSpec, user: str, now: float) -> list[JobRecord]:
        account = spec.account or user
        limit = spec.time_limit or self.config.default_time_limit
        base = JobRecord(
            id=0,
            name=spec.name or "job",
            user=user,
            account=account,
            spec=spec,
            state=JobState.PENDING,
            submit_time=now,
            time_limit=limit,
            held="user" if spec.hold else "",
        )
        if not spec.array:
            return [base]
        task_ids, _limit = parse_array(spec.array)
        return [dataclasses.replace(base, array_task_id=t) for t in task_ids]

    def _check_fits_cluster(self, item: SubmitItem) -> None:
        spec, src = item.spec, item.source or "job"
        if not spec.image.strip():
            raise UserError(f"{src}: image: is required")
        if not spec.command:
            raise UserError(f"{src}: command: is required")
        if spec.gpus < 0 or spec.nodes < 1:
            raise UserError(f"{src}: resources.gpus must be >= 0 and nodes >= 1")
        if self.config.max_time_limit and spec.time_limit > self.config.max_time_limit:
            raise UserError(
                f"{src}: time_limit: {spec.time_limit:.0f}s exceeds the maximum of "
                f"{self.config.max_time_limit:.0f}s"
            )
        if spec.reservation:
            raise UserError(f"{src}: reservation: unknown reservation {spec.reservation!r}")
        if spec.dependency:
            self._check_dependency_targets(src, spec.dependency)
        if not self.nodes:
            raise UserError(f"{src}: no node is registered yet, so nothing could ever run this job")
        probe = self._pending_view(
            dataclasses.replace(self._expand(spec, "probe", 0.0)[0], id=-1),
            blocked=None,
        )
        capable = [n for n in self.nodes.values() if node_matches(probe, self._node_view(n))]
        if len(capable) < spec.nodes:
            largest = max(
                self.nodes.values(),
                key=lambda n: (n.gpu_count, n.inventory.cpus, n.inventory.memory),
            )
            raise UserError(
                f"{src}: resources: asks for {spec.nodes} node(s) with {spec.gpus} GPU(s)"
                f"{' of type ' + spec.gpu_type if spec.gpu_type else ''}"
                f"{' and labels ' + str(dict(spec.node_selector)) if spec.node_selector else ''}"
                f" each, but only {len(capable)} registered node(s) could ever hold that "
                f"(the largest, {largest.name}, has {largest.gpu_count} GPU(s))"
            )

    def _check_dependency_targets(self, src: str, text: str) -> None:
        for _kind, ids in parse_dependency(text):
            for job_id in ids:
                if not self._resolve_one(job_id):
                    raise UserError(f"{src}: dependency: job {job_id} does not exist")

    # ================================================================ queries

    def resolve(self, display_id: str) -> list[JobRecord]:
        """Jobs named by ``123`` (a job, or every task of array 123) or ``123_4``."""
        return self._resolve_one(display_id)

    def _resolve_one(self, display_id: str) -> list[JobRecord]:
        text = display_id.strip()
        try:
            if "_" in text:
                array_text, task_text = text.split("_", 1)
                array_id, task_id = int(array_text), int(task_text)
                rows = self.store.query_jobs(JobQuery(array_ids=(array_id,)))
                return [self._live(r) for r in rows if r.array_task_id == task_id]
            job_id = int(text)
        except ValueError:
            raise UserError(f"{display_id!r} is not a job id like 123 or 123_4") from None
        rows = self.store.query_jobs(JobQuery(ids=(job_id,), array_ids=(job_id,)))
        return [self._live(r) for r in rows if r.array_job_id in (None, job_id)]

    def _live(self, job: JobRecord) -> JobRecord:
        return dataclasses.replace(self.jobs.get(job.id, job))

    def list_jobs(self, query: JobQuery, display_ids: Sequence[str] = ()) -> list[JobRecord]:
        """Jobs matching the query (and ids, if given), as copies safe to read elsewhere."""
        if display_ids:
            ids: list[int] = []
            arrays: list[int] = []
            for text in display_ids:
                for job in self._resolve_one(text):
                    ids.append(job.id)
            query = dataclasses.replace(query, ids=tuple(ids), array_ids=tuple(arrays))
            if not ids:
                return []
        if not query.states or set(query.states) - {JobState.PENDING, *ACTIVE_STATES}:
            return [self._live(r) for r in self.store.query_jobs(query)]
        out = [
            dataclasses.replace(j)
            for j in sorted(self.jobs.values(), key=lambda j: j.id)
            if j.state in query.states
            and (not query.ids or j.id in query.ids)
            and (not query.users or j.user in query.users)
            and (not query.accounts or j.account in query.accounts)
            and j.id > query.after_id
        ]
        return out[: query.limit] if query.limit else out

    def get_job(self, display_id: str) -> tuple[JobRecord, list[JobEvent]]:
        jobs = self._resolve_one(display_id)
        if len(jobs) != 1:
            if not jobs:
                raise NotFound(f"job {display_id} does not exist")
            raise UserError(f"{display_id} is an array job; name one task like {display_id}_0")
        return jobs[0], self.store.events(jobs[0].id)

    def job_location(self, display_id: str, attempt: int) -> tuple[JobRecord, str, int]:
        """(job, node, attempt) whose output ``glogs`` should read; NotFound if none."""
        job, _events = self.get_job(display_id)
        if job.attempt == 0:
            raise NotFound(f"job {display_id} has not started, so it has no output yet")
        wanted = attempt or job.attempt
        if wanted == job.attempt and job.allocation:
            return job, job.allocation[0].node, wanted
        launches = [
            e.reason.removeprefix(LAUNCH_PREFIX).split(",")[0]
            for e in self.store.events(job.id)
            if e.attempt == wanted and e.reason.startswith(LAUNCH_PREFIX)
        ]
        if not launches:
            raise NotFound(f"job {display_id} has no attempt {wanted}")
        return job, launches[0], wanted

    # ================================================================ cancel

    def cancel(
        self, display_ids: Sequence[str], user: str, reason: str = ""
    ) -> tuple[list[CancelResult], Orders]:
        """Cancel pending jobs at once and order running ones stopped (COMPLETING -> CANCELLED)."""
        results: list[CancelResult] = []
        changed: list[JobRecord] = []
        events: list[JobEvent] = []
        orders: Orders = []
        why = reason or f"cancelled by {user}"
        for display_id in display_ids:
            try:
                jobs = self._resolve_one(display_id)
            except UserError as exc:
                results.append(CancelResult(display_id, False, str(exc)))
                continue
            if not jobs:
                results.append(CancelResult(display_id, False, f"job {display_id} does not exist"))
                continue
            live = [self.jobs[j.id] for j in jobs if j.id in self.jobs]
            if not live:
                results.append(
                    CancelResult(display_id, False, f"job {display_id} has already ended")
                )
                continue
            for job in live:
                if job.state is JobState.PENDING:
                    events.append(self._finish(job, JobState.CANCELLED, why))
                    changed.append(job)
                elif job.state in (JobState.CONFIGURING, JobState.RUNNING):
                    events.append(self._transition(job, JobState.COMPLETING, why))
                    job.stop_state = JobState.CANCELLED.value
                    changed.append(job)
                    orders.extend(self._kill_orders(job, why))
            results.append(CancelResult(display_id, True, ""))
        self.store.save(changed, events)
        self.version += 1
        return results, orders

    # ================================================================ agents

    def agent_hello(self, hello: Hello, session: int) -> Orders:
        """Authenticate a (re)connecting agent, record its inventory, and reconcile attempts.

        The Welcome lists the attempts the agent must keep; it stops every other container.
        Launch orders that were sent but never started are sent again (same attempt).
        """
        node = self.nodes.get(hello.node_name)
        if node is None:
            if not self.config.open_registration:
                raise AuthError(
                    f"node {hello.node_name!r} is not registered; an admin registers it with "
                    f"`gadmin node add {hello.node_name}`"
                )
            node = NodeState(name=hello.node_name, token_hash=hash_token(hello.token))
            self.nodes[node.name] = node
        elif node.token_hash and not hmac.compare_digest(node.token_hash, hash_token(hello.token)):
            raise AuthError(f"wrong join token for node {hello.node_name!r}")
        now = self.clock()
        node.inventory = hello.inventory
        node.address = hello.address
        node.connected = True
        node.session = session
        node.last_heartbeat = now
        node.down_since = None
        node.engine_healthy = True
        node.attempts = hello.attempts
        self.store.save_node(node)
        running = {(a.job_id, a.attempt): a.running for a in hello.attempts}
        reported = set(running)
        keep: list[RunningAttempt] = []
        orders: Orders = []
        changed: list[JobRecord] = []
        events: list[JobEvent] = []
        for job in list(self.jobs.values()):
            if job.state not in ACTIVE_STATES or node.name not in job.node_names:
                continue
            key = (job.id, job.attempt)
            if key in reported:
                keep.append(RunningAttempt(job.id, job.attempt))
                if job.state is JobState.CONFIGURING and running.get(key):
                    job.start_time = now  # its STARTED report was lost with the old stream
                    events.append(
                        self._transition(job, JobState.RUNNING, f"running on {node.name}")
                    )
                    changed.append(job)
                if job.state is JobState.COMPLETING:
                    orders.extend(
                        (n, o) for n, o in self._kill_orders(job, "stop ordered") if n == node.name
                    )
            elif job.state is JobState.CONFIGURING:
                keep.append(RunningAttempt(job.id, job.attempt))
                orders.extend((n, o) for n, o in self._launch_orders(job) if n == node.name)
            else:
                events.extend(
                    self._attempt_ended(
                        job, JobState.NODE_FAIL, f"container lost on {node.name}", orders
                    )
                )
                changed.append(job)
        self.store.save(changed, events)
        self.version += 1
        welcome: Orders = [(node.name, Welcome(self.config.heartbeat_interval, tuple(keep)))]
        log.info("node %s connected with %d GPU(s)", node.name, node.gpu_count)
        return welcome + orders

    def agent_heartbeat(self, node_name: str, session: int, beat: Heartbeat) -> bool:
        """Record telemetry and engine health; True when schedulability changed."""
        node = self.nodes.get(node_name)
        if node is None or node.session != session:
            return False
        before = self._schedulable(node)
        node.telemetry = beat.gpus
        node.telemetry_time = self.clock()
        node.last_heartbeat = node.telemetry_time
        node.engine_healthy = beat.engine_healthy
        node.engine_error = beat.engine_error
        node.attempts = beat.attempts
        node.down_since = None
        changed = before != self._schedulable(node)
        if changed:
            self.version += 1
            log.warning(
                "node %s engine %s%s",
                node_name,
                "healthy" if beat.engine_healthy else "unhealthy: ",
                "" if beat.engine_healthy else beat.engine_error,
            )
        return changed

    def agent_disconnected(self, node_name: str, session: int) -> None:
        node = self.nodes.get(node_name)
        if node is None or node.session != session:
            return
        node.connected = False
        node.session = 0
        node.down_since = self.clock()
        self.store.save_node(node)
        self.version += 1
        log.warning("node %s disconnected", node_name)

    def agent_event(self, node_name: str, session: int, ev: AgentEvent) -> Orders:
        """Apply what an agent reports about one attempt; stale reports only get an ack."""
        node = self.nodes.get(node_name)
        if node is None or node.session != session:
            return []
        orders: Orders = []
        job = self.jobs.get(ev.job_id)
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
        events: list[JobEvent] = []
        when = ev.time or self.clock()
        if ev.kind == "STARTED":
            if job.state is JobState.CONFIGURING:
                job.start_time = when
                events.append(self._transition(job, JobState.RUNNING, f"started on {node_name}"))
        elif ev.kind == "LAUNCH_FAILED" and ev.engine_fault:
            node.engine_healthy = False
            node.engine_error = ev.message
            events.extend(self._requeue(job, f"engine on {node_name} failed: {ev.message}", orders))
        else:
            final, why = self._final_state(job, ev)
            events.extend(self._gang_part_ended(job, node_name, final, why, ev, orders))
        self.store.save([job], events)
        self.version += 1
        return orders

    def _final_state(self, job: JobRecord, ev: AgentEvent) -> tuple[JobState, str]:
        if job.stop_state and ev.kind in ("KILLED", "EXITED", "TIMED_OUT"):
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
        events: list[JobEvent] = []
        if ev.kind == "EXITED" and ev.oom_killed and ev.exit_code == 0:
            events.append(
                self._note(job, "warning", f"OOMKilled reported on {node_name} but exit code 0")
            )
        if ev.kind in ("EXITED", "KILLED", "TIMED_OUT") and not job.exit_code:
            job.exit_code = ev.exit_code  # a gang keeps its first non-zero exit code
        if len(job.allocation) > 1:
            key = (job.id, job.attempt)
            done = self._gang_results.setdefault(key, {})
            done[node_name] = final
            if final is not JobState.COMPLETED and job.state is not JobState.COMPLETING:
                events.append(
                    self._transition(job, JobState.COMPLETING, f"rank on {node_name}: {why}")
                )
                job.stop_state = final.value
                orders.extend((n, o) for n, o in self._kill_orders(job, why) if n not in done)
            if len(done) < len(job.allocation):
                return events
            self._gang_results.pop(key, None)
            worst = next(
                (s for s in done.values() if s is not JobState.COMPLETED), JobState.COMPLETED
            )
            final = JobState(job.stop_state) if job.stop_state else worst
        events.extend(self._attempt_ended(job, final, why, orders))
        return events

    # ================================================================ plan / apply

    def snapshot(self, extra: Iterable[JobRecord] = ()) -> Snapshot:
        """A frozen view of the cluster for one pass (``extra`` adds probe jobs for dry runs)."""
        now = self.clock()
        pending: list[PendingJob] = []
        running: list[RunningJob] = []
        for job in (*self.jobs.values(), *extra):
            if job.state is JobState.PENDING:
                pending.append(self._pending_view(job, self._blocked(job, now)))
            elif job.state in ACTIVE_STATES:
                running.append(
                    RunningJob(
                        id=job.id,
                        user=job.user,
                        account=job.account,
                        allocations=tuple(
                            Allocation(a.node, a.gpus, a.cpus, a.memory) for a in job.allocation
                        ),
                        start_time=job.start_time or now,
                        time_limit=job.time_limit,
                        priority=job.spec.priority,
                        preemptible=job.spec.preemptible,
                    )
                )
        return Snapshot(
            now=now,
            nodes=tuple(self._node_view(n) for n in self.nodes.values()),
            pending=tuple(pending),
            running=tuple(running),
            version=self.version,
        )

    def _pending_view(self, job: JobRecord, blocked: str | None) -> PendingJob:
        spec = job.spec
        return PendingJob(
            id=job.id,
            user=job.user,
            account=job.account,
            submit_time=job.submit_time,
            time_limit=job.time_limit,
            gpus=spec.gpus,
            nodes=spec.nodes,
            cpus=spec.cpus,
            memory=spec.memory,
            gpu_type=spec.gpu_type,
            gpu_memory=spec.gpu_memory,
            node_selector=spec.node_selector,
            exclusive=spec.exclusive,
            priority=spec.priority,
            qos=spec.qos,
            preemptible=spec.preemptible,
            blocked=blocked,
        )

    def _schedulable(self, node: NodeState) -> bool:
        return node.connected and node.engine_healthy and not node.admin_state

    def _node_view(self, node: NodeState) -> NodeView:
        broken = {t.index for t in node.telemetry if t.error}
        return NodeView(
            name=node.name,
            gpus=tuple(
                GpuView(g.index, g.name, g.memory_total, allocatable=g.index not in broken)
                for g in node.inventory.gpus
            ),
            cpus=node.inventory.cpus,
            memory=node.inventory.memory,
            labels={**node.inventory.labels, **node.labels},
            schedulable=self._schedulable(node),
        )

    def _blocked(self, job: JobRecord, now: float) -> str | None:
        if job.held:
            return reasons.HELD_ADMIN if job.held == "admin" else reasons.HELD_USER
        if job.spec.begin_time and job.spec.begin_time > now:
            return reasons.BEGIN_TIME
        if job.spec.dependency:
            return self._dependency_reason(job.spec.dependency)
        return None

    def _dependency_reason(self, text: str) -> str | None:
        waiting = False
        for kind, ids in parse_dependency(text):
            for display_id in ids:
                for state in self._target_states(display_id):
                    ok, never = _dependency_outcome(kind, state)
                    if never:
                        return reasons.DEPENDENCY_NEVER_SATISFIED
                    waiting = waiting or not ok
        return reasons.DEPENDENCY if waiting else None

    def _target_states(self, display_id: str) -> list[JobState]:
        return [j.state for j in self._resolve_one(display_id)]

    def apply(self, plan: Plan, version: int) -> Orders:
        """Commit a plan's placements that still fit, record reasons, and return launch/kill
        orders. Placements that no longer fit are dropped and re-planned next pass."""
        del version
        used: dict[str, set[int]] = {}
        for job in self.jobs.values():
            if job.state in ACTIVE_STATES:
                for alloc in job.allocation:
                    used.setdefault(alloc.node, set()).update(alloc.gpus)
        orders: Orders = []
        changed: list[JobRecord] = []
        events: list[JobEvent] = []
        for placement in plan.placements:
            job = self.jobs.get(placement.job_id)
            if job is None or job.state is not JobState.PENDING or job.held:
                continue
            allocs = self._check_placement(placement.allocations, used)
            if allocs is None:
                continue
            for alloc in allocs:
                used.setdefault(alloc.node, set()).update(alloc.gpus)
            job.attempt += 1
            job.allocation = allocs
            job.reason = ""
            job.exit_code = None
            job.start_time = None
            job.end_time = None
            job.estimated_start = None
            where = ",".join(a.node for a in allocs)
            events.append(self._transition(job, JobState.CONFIGURING, LAUNCH_PREFIX + where))
            changed.append(job)
            orders.extend(self._launch_orders(job))
        for job_id in plan.preemptions:
            job = self.jobs.get(job_id)
            if job is None or job.state not in (JobState.CONFIGURING, JobState.RUNNING):
                continue
            events.append(
                self._transition(job, JobState.COMPLETING, "preempted for a higher-priority job")
            )
            job.stop_state = JobState.PREEMPTED.value
            changed.append(job)
            orders.extend(self._kill_orders(job, "preempted"))
        for job_id, reason in plan.reasons.items():
            job = self.jobs.get(job_id)
            if job is not None and job.state is JobState.PENDING and job.reason != reason:
                job.reason = reason
                changed.append(job)
        for job_id, start in plan.est_start.items():
            job = self.jobs.get(job_id)
            if job is not None:
                job.estimated_start = start
        if changed or events:
            self.store.save(changed, events)
            self.version += 1
        return orders

    def _check_placement(
        self, allocations: Sequence[Allocation], used: dict[str, set[int]]
    ) -> list[NodeAlloc] | None:
        out: list[NodeAlloc] = []
        for alloc in allocations:
            node = self.nodes.get(alloc.node)
            if node is None or not self._schedulable(node):
                return None
            uuids = {g.index: g.uuid for g in node.inventory.gpus}
            if any(i not in uuids or i in used.get(alloc.node, set()) for i in alloc.gpu_indices):
                return None
            out.append(
                NodeAlloc(
                    alloc.node,
                    tuple(alloc.gpu_indices),
                    tuple(uuids[i] for i in alloc.gpu_indices),
                    alloc.cpus,
                    alloc.memory,
                )
            )
        return out

    # ================================================================ periodic work

    def tick(self) -> Orders:
        """Mark nodes whose heartbeats stopped DOWN; end the attempts of nodes DOWN past the
        grace period as NODE_FAIL (requeued when allowed)."""
        now = self.clock()
        orders: Orders = []
        changed: list[JobRecord] = []
        events: list[JobEvent] = []
        for node in self.nodes.values():
            if (
                node.connected
                and node.last_heartbeat
                and now - node.last_heartbeat > self.config.node_timeout
            ):
                node.connected = False
                node.session = 0
                node.down_since = node.last_heartbeat
                self.version += 1
                log.warning(
                    "node %s missed heartbeats for %.0fs: DOWN",
                    node.name,
                    now - node.last_heartbeat,
                )
            if (
                node.connected
                or node.down_since is None
                or now - node.down_since < self.config.node_grace
            ):
                continue
            for job in list(self.jobs.values()):
                if job.state in ACTIVE_STATES and node.name in job.node_names:
                    events.extend(
                        self._attempt_ended(
                            job,
                            JobState.NODE_FAIL,
                            f"node {node.name} down for more than {self.config.node_grace:.0f}s",
                            orders,
                        )
                    )
                    changed.append(job)
        if changed:
            self.store.save(changed, events)
            self.version += 1
        return orders

    # ================================================================ transitions

    def _transition(self, job: JobRecord, new: JobState, why: str) -> JobEvent:
        old = job.state
        job.state = new
        return JobEvent(job.id, self.clock(), job.attempt, old.value, new.value, why)

    def _note(self, job: JobRecord, kind: str, text: str) -> JobEvent:
        return JobEvent(
            job.id, self.clock(), job.attempt, job.state.value, job.state.value, text, kind
        )

    def _finish(self, job: JobRecord, final: JobState, why: str) -> JobEvent:
        ev = self._transition(job, final, why)
        job.reason = why
        job.end_time = self.clock()
        job.stop_state = ""
        self.jobs.pop(job.id, None)
        return ev

    def _attempt_ended(
        self, job: JobRecord, final: JobState, why: str, orders: Orders
    ) -> list[JobEvent]:
        """End the current attempt: requeue NODE_FAIL/PREEMPTED when allowed, else finish."""
        if final in (JobState.NODE_FAIL, JobState.PREEMPTED):
            allowed = final is JobState.PREEMPTED or (
                job.spec.requeue and job.attempt <= self.config.max_requeue
            )
            if allowed:
                ev = self._transition(job, final, why)
                return [ev, *self._requeue(job, f"requeued after {final.value}: {why}", orders)]
        if len(job.allocation) > 1:
            orders.extend(self._kill_orders(job, why))
        return [self._finish(job, final, why)]

    def _requeue(self, job: JobRecord, why: str, orders: Orders) -> list[JobEvent]:
        del orders
        ev = self._transition(job, JobState.PENDING, why)
        job.allocation = []
        job.stop_state = ""
        job.start_time = None
        job.reason = ""
        return [ev]

    def _kill_orders(self, job: JobRecord, why: str) -> Orders:
        return [
            (a.node, KillOrder(job.id, job.attempt, why, self.config.kill_grace))
            for a in job.allocation
        ]

    def _launch_orders(self, job: JobRecord) -> Orders:
        nodes = job.node_names
        env = {
            "ROTA_JOB_ID": job.display_id,
            "ROTA_ATTEMPT": str(job.attempt),
            "ROTA_JOB_NAME": job.name,
            "ROTA_USER": job.user,
            "ROTA_ACCOUNT": job.account,
            "ROTA_NODELIST": ",".join(nodes),
        }
        if job.array_job_id is not None:
            env["ROTA_ARRAY_JOB_ID"] = str(job.array_job_id)
            env["ROTA_ARRAY_TASK_ID"] = str(job.array_task_id)
        gang = len(job.allocation) > 1
        if gang:
            master = self.nodes[nodes[0]].address or nodes[0]
            env.update(
                MASTER_ADDR=master,
                MASTER_PORT=str(self._master_port(job.id)),
                WORLD_SIZE=str(len(nodes)),
                ROTA_NNODES=str(len(nodes)),
                ROTA_GPUS_PER_NODE=str(job.spec.gpus),
            )
        orders: Orders = []
        for rank, alloc in enumerate(job.allocation):
            node_env = dict(env)
            node_env["ROTA_GPU_UUIDS"] = ",".join(alloc.uuids)
            node_env["ROTA_GPU_INDICES"] = ",".join(str(i) for i in alloc.gpus)
            if gang:
                node_env["NODE_RANK"] = str(rank)
            orders.append(
                (
                    alloc.node,
                    LaunchOrder(
                        job_id=job.id,
                        attempt=job.attempt,
                        display_id=job.display_id,
                        spec=job.spec,
                        gpu_indices=alloc.gpus,
                        gpu_uuids=alloc.uuids,
                        env=node_env,
                        time_limit=job.time_limit,
                        host_network=gang,
                    ),
                )
            )
        return orders

    def _master_port(self, job_id: int) -> int:
        low, high = self.config.master_port_range
        return low + job_id % (high - low + 1)


def _dependency_outcome(kind: str, state: JobState) -> tuple[bool, bool]:
    """(satisfied, never satisfiable) of one dependency clause for one target state."""
    ended = state.terminal
    if kind == "after":
        return state is not JobState.PENDING, False
    if kind == "afterany":
        return ended, False
    if kind == "afterok":
        return state is JobState.COMPLETED, ended and state is not JobState.COMPLETED
    # afternotok
    return ended and state is not JobState.COMPLETED, state is JobState.COMPLETED
