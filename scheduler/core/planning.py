"""Plan and apply: the snapshot a pass decides on, and committing the plan it returns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rota.jobspec import parse_dependency
from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeAlloc
from rota.scheduler.core.base import (
    LAUNCH_PREFIX,
    CoreBase,
    Orders,
    ViewCache,
)
from rota.scheduler.policy import reasons
from rota.scheduler.policy.snapshot import Allocation, PendingJob, Plan, RunningJob, Snapshot
from rota.scheduler.policy.usage import Usage
from rota.states import ACTIVE_STATES, JobState


class PlanningCore(CoreBase):
    """Snapshots for the policy, and applying its plans."""

    _usage_view: Usage | None = None

    def snapshot(self, extra: Iterable[JobRecord] = ()) -> Snapshot:
        """A frozen view of the cluster for one pass (``extra`` adds probe jobs for dry runs)."""
        now = self.clock()
        pending: list[PendingJob] = []
        running: list[RunningJob] = []
        for job in (*self.jobs.values(), *extra):
            if job.state is JobState.PENDING:
                blocked = self._blocked(job, now)
                key: tuple[object, ...] = ("P", blocked, job.time_limit, job.attempt)
                view = self._cached_view(job, key)
                if not isinstance(view, PendingJob):
                    view = self._keep_view(job, key, self._pending_view(job, blocked))
                pending.append(view)
            elif job.state in ACTIVE_STATES:
                key = ("R", job.state, job.start_time, job.stop_state, job.attempt)
                view = self._cached_view(job, key)
                if not isinstance(view, RunningJob):
                    view = self._keep_view(job, key, self._running_view(job, now))
                running.append(view)
        views: ViewCache = self._job_views
        if len(views) > 2 * len(self.jobs) + 1000:
            for gone in [k for k in views if k not in self.jobs]:
                del views[gone]
        return Snapshot(
            now=now,
            nodes=tuple(self._node_view(n) for n in self.nodes.values()),
            pending=tuple(pending),
            running=tuple(running),
            version=self.version,
            usage=self._published_usage(now),
            config=self.policy_config,
        )

    def _cached_view(
        self, job: JobRecord, key: tuple[object, ...]
    ) -> PendingJob | RunningJob | None:
        hit = self._job_views.get(job.id)
        return hit[1] if hit is not None and hit[0] == key else None

    def _keep_view(
        self, job: JobRecord, key: tuple[object, ...], view: PendingJob | RunningJob
    ) -> PendingJob | RunningJob:
        if job.id >= 0:  # dry-run probes are never kept
            self._job_views[job.id] = (key, view)
        return view

    def _running_view(self, job: JobRecord, now: float) -> RunningJob:
        return RunningJob(
            id=job.id,
            user=job.user,
            account=job.account,
            allocations=tuple(Allocation(a.node, a.gpus, a.cpus, a.memory) for a in job.allocation),
            start_time=job.start_time or now,
            time_limit=job.time_limit,
            priority=job.spec.priority,
            preemptible=job.spec.preemptible,
            qos=job.spec.qos,
            exclusive=job.spec.exclusive,
            array_job_id=job.array_job_id,
            stopping=job.state is JobState.COMPLETING or bool(job.stop_state),
        )

    def _published_usage(self, now: float) -> Usage:
        """The ledger's view, republished at most once per ``priority_period`` so that the
        policy's cached priorities stay valid in between."""
        published = self._usage_view
        if published is None or now - published.as_of >= self.policy_config.priority_period:
            published = self._usage_view = self.usage.ledger.view(now)
        return published

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
