"""Core state and the job life-cycle transitions shared by every part of Core.

``CoreBase`` owns the in-memory cluster model and the store. Every Core method runs on one
thread (the engine's core thread), commits before it returns, and returns the orders to send to
agents afterwards, so an order never goes out for a change that was not committed.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rota.jobspec import JobSpec, parse_array
from rota.scheduler.cluster.messages import (
    AgentOrder,
    Inventory,
    KillOrder,
    LaunchOrder,
)
from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeState
from rota.scheduler.config import SchedulerConfig, policy_config
from rota.scheduler.core.usage import HISTORY_HALF_LIVES, UsageBook
from rota.scheduler.core.views import JobViews
from rota.scheduler.policy import Decide
from rota.scheduler.policy.snapshot import (
    GpuView,
    NodeView,
    PendingJob,
)
from rota.scheduler.store.store import JobQuery, Store
from rota.states import JobState

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


def parse_display_id(text: str) -> tuple[int, int | None]:
    """``123`` -> (123, None) (a job, or every task of array 123); ``123_4`` -> (123, 4)."""
    array_text, _, task_text = text.strip().partition("_")
    try:
        return int(array_text), int(task_text) if task_text else None
    except ValueError:
        raise UserError(f"{text!r} is not a job id like 123 or 123_4") from None


class CoreBase:
    """State of the scheduler and the transitions every part uses. Not thread-safe."""

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
        self._job_views = JobViews(set(self.jobs))
        # node name -> (inventory, labels, telemetry, GPUs with errors, schedulable, view)
        self._base_node_views: dict[
            str, tuple[Inventory, dict[str, str], object, frozenset[int], bool, NodeView]
        ] = {}
        self._gang_results: dict[tuple[int, int], dict[str, JobState]] = {}
        self.policy_config = policy_config(config)
        half_life = self.policy_config.usage_half_life
        self.usage = UsageBook.rebuild(
            half_life,
            store.ended_jobs(now - HISTORY_HALF_LIVES * half_life),
            self.jobs.values(),
            now,
        )

    def _save(self, jobs: Sequence[JobRecord], events: Sequence[JobEvent]) -> None:
        """Commit changed jobs and events; every change to a job goes through here, which
        is how the next snapshot knows which job views to rebuild."""
        self.store.save(jobs, events)
        self._job_views.touch(j.id for j in jobs)
        self._job_views.touch(e.job_id for e in events)

    def forget_views(self) -> None:
        """Drop every kept snapshot view (the next snapshot rebuilds them all)."""
        self._job_views = JobViews(set(self.jobs))
        self._base_node_views.clear()

    def _transition(self, job: JobRecord, new: JobState, why: str) -> JobEvent:
        old = job.state
        job.state = new
        now = self.clock()
        self.usage.changed(job, new, now)
        return JobEvent(job.id, now, job.attempt, old.value, new.value, why)

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
        """End the current attempt: requeue NODE_FAIL/PREEMPTED when allowed, and PENDING (a
        requeue that was ordered) always; otherwise finish the job."""
        if final is JobState.PENDING:
            return self._requeue(job, why)
        if final in (JobState.NODE_FAIL, JobState.PREEMPTED):
            allowed = final is JobState.PREEMPTED or (
                job.spec.requeue and job.attempt <= self.config.max_requeue
            )
            if allowed:
                ev = self._transition(job, final, why)
                return [ev, *self._requeue(job, f"requeued after {final.value}: {why}")]
        if len(job.allocation) > 1:
            orders.extend(self._kill_orders(job, why))
        return [self._finish(job, final, why)]

    def _requeue(self, job: JobRecord, why: str) -> list[JobEvent]:
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
                MASTER_PORT=str(job.allocation[0].port or self._master_port(job.id)),
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

    def _master_port(self, job_id: int, node: str = "") -> int:
        """A gang's MASTER_PORT: from its id, moved on past the ports of other live gangs
        whose first node is ``node`` (while the range has one free)."""
        low, high = self.config.master_port_range
        span = high - low + 1
        if not node:
            return low + job_id % span
        taken = {
            j.allocation[0].port or low + j.id % span
            for j in self.jobs.values()
            if j.id != job_id and len(j.allocation) > 1 and j.allocation[0].node == node
        }
        for step in range(span):
            port = low + (job_id + step) % span
            if port not in taken:
                return port
        return low + job_id % span

    def _resolve_one(self, display_id: str) -> list[JobRecord]:
        text = display_id.strip()
        try:
            if "_" in text:
                array_text, task_text = text.split("_", 1)
                array_id, task_id = int(array_text), int(task_text)
                named = JobQuery(array_ids=(array_id,), task_ids=(task_id,))
                return [self._live(r) for r in self.store.query_jobs(named)]
            job_id = int(text)
        except ValueError:
            raise UserError(f"{display_id!r} is not a job id like 123 or 123_4") from None
        rows = self.store.query_jobs(JobQuery(ids=(job_id,), array_ids=(job_id,)))
        return [self._live(r) for r in rows if r.array_job_id in (None, job_id)]

    def _act_on(
        self,
        display_ids: Sequence[str],
        act: Callable[[JobRecord, list[JobEvent], Orders], str],
        live_only: bool = False,
    ) -> tuple[list[CancelResult], Orders]:
        """Apply ``act`` to every job each id names and commit; ``act`` returns why it could
        not apply ("" when it did). ``live_only`` skips jobs that have ended."""
        results: list[CancelResult] = []
        changed: list[JobRecord] = []
        events: list[JobEvent] = []
        orders: Orders = []
        for display_id in display_ids:
            try:
                found = self._resolve_one(display_id)
            except UserError as exc:
                results.append(CancelResult(display_id, False, str(exc)))
                continue
            jobs = [self.jobs.get(j.id, j) for j in found if not live_only or j.id in self.jobs]
            if not jobs:
                why = "has already ended" if found else "does not exist"
                results.append(CancelResult(display_id, False, f"job {display_id} {why}"))
                continue
            problems = []
            for job in jobs:
                problem = act(job, events, orders)
                if problem:
                    problems.append(f"{job.display_id} {problem}")
                else:
                    changed.append(job)
            results.append(CancelResult(display_id, not problems, "; ".join(problems)))
        if changed or events:
            self._save(changed, events)
            self.version += 1
        return results, orders

    def _live(self, job: JobRecord) -> JobRecord:
        """A copy of the current record of ``job``, safe to read on other threads."""
        return self._copy(self.jobs.get(job.id, job))

    def _copy(self, job: JobRecord) -> JobRecord:
        """A copy of ``job`` carrying the last plan's estimated start when it is pending."""
        pending = job.state is JobState.PENDING
        start = self._job_views.starts.get(job.id) if pending else None
        return dataclasses.replace(job, estimated_start=start)

    def _schedulable(self, node: NodeState) -> bool:
        return node.connected and node.engine_healthy and not node.admin_state

    def _node_view(self, node: NodeState) -> NodeView:
        """The policy's view of ``node``; the same object while nothing it shows changed."""
        schedulable = self._schedulable(node)
        hit = self._base_node_views.get(node.name)
        if (
            hit is not None
            and hit[0] is node.inventory
            and hit[1] is node.labels
            and hit[4] == schedulable
        ):
            if hit[2] is node.telemetry:
                return hit[5]
            broken = frozenset(t.index for t in node.telemetry if t.error)
            if broken == hit[3]:
                self._base_node_views[node.name] = (*hit[:2], node.telemetry, *hit[3:])
                return hit[5]
        else:
            broken = frozenset(t.index for t in node.telemetry if t.error)
        view = NodeView(
            name=node.name,
            gpus=tuple(
                GpuView(g.index, g.name, g.memory_total, allocatable=g.index not in broken)
                for g in node.inventory.gpus
            ),
            cpus=node.inventory.cpus,
            memory=node.inventory.memory,
            labels={**node.inventory.labels, **node.labels},
            schedulable=schedulable,
        )
        self._base_node_views[node.name] = (
            node.inventory,
            node.labels,
            node.telemetry,
            broken,
            schedulable,
            view,
        )
        return view

    def _preemptible(self, spec: JobSpec) -> bool:
        """Flagged ``preemptible``, or of a QoS class the config makes preemptible."""
        return spec.preemptible or spec.qos in self.config.preemptible_qos

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
            preemptible=self._preemptible(spec),
            blocked=blocked,
            default_limit=spec.time_limit <= 0,
            array_job_id=job.array_job_id,
            array_task_limit=array_task_limit(spec.array) if spec.array else 0,
        )


@functools.lru_cache(maxsize=1024)
def array_task_limit(text: str) -> int:
    """The ``%`` limit of an ``array:`` value (0: none)."""
    return parse_array(text)[1] or 0
