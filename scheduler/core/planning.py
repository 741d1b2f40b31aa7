"""Plan and apply: the snapshot a pass decides on, and committing the plan it returns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import compress
from operator import ne

from rota.jobspec import parse_dependency
from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeAlloc
from rota.scheduler.core.base import LAUNCH_PREFIX, CoreBase, Orders
from rota.scheduler.policy import reasons
from rota.scheduler.policy.snapshot import Allocation, Plan, RunningJob, Snapshot
from rota.scheduler.policy.usage import Usage
from rota.scheduler.store.store import JobQuery
from rota.states import ACTIVE_STATES, JobState


class PlanningCore(CoreBase):
    """Snapshots for the policy, and applying its plans."""

    _usage_view: Usage | None = None

    def snapshot(self, extra: Iterable[JobRecord] = ()) -> Snapshot:
        """A frozen view of the cluster for one pass (``extra`` adds probe jobs for dry runs).

        Costs O(changed jobs + nodes): views of unchanged jobs are kept (see ``views``)."""
        now = self.clock()
        self._sync_views(now)
        kept = self._job_views
        pending = kept.pending_jobs()
        probes = [
            self._pending_view(job, self._blocked(job, now))
            for job in extra
            if job.state is JobState.PENDING
        ]
        return Snapshot(
            now=now,
            nodes=kept.node_views([self._node_view(n) for n in self.nodes.values()]),
            pending=(*pending, *probes) if probes else pending,
            running=kept.running_jobs(),
            version=self.version,
            usage=self._published_usage(now),
            config=self.policy_config,
        )

    def _sync_views(self, now: float) -> None:
        """Rebuild the kept views of jobs that changed, and of volatile pending jobs whose
        inputs (what ``_blocked`` says, the time limit, the attempt) are no longer the same."""
        kept = self._job_views
        ids = kept.dirty | kept.volatile if kept.volatile else kept.dirty
        kept.dirty = set()
        for job_id in ids:
            job = self.jobs.get(job_id)
            if job is None:
                kept.drop(job_id)
            elif job.state is JobState.PENDING:
                blocked = self._blocked(job, now)
                key: tuple[object, ...] = ("P", blocked, job.time_limit, job.attempt)
                if kept.keys.get(job_id) != key or job_id not in kept.pending:
                    kept.keep_pending(job_id, key, self._pending_view(job, blocked))
                begin = job.spec.begin_time
                if job.spec.dependency or (begin and begin > now):
                    kept.volatile.add(job_id)
                else:
                    kept.volatile.discard(job_id)
            elif job.state in ACTIVE_STATES:
                key = ("R", job.state, job.start_time, job.stop_state, job.attempt)
                if kept.keys.get(job_id) != key or job_id not in kept.running:
                    kept.keep_running(job_id, key, self._running_view(job, now))
                kept.volatile.discard(job_id)
            else:
                kept.drop(job_id)

    def _running_view(self, job: JobRecord, now: float) -> RunningJob:
        return RunningJob(
            id=job.id,
            user=job.user,
            account=job.account,
            allocations=tuple(Allocation(a.node, a.gpus, a.cpus, a.memory) for a in job.allocation),
            start_time=job.start_time or now,
            time_limit=job.time_limit,
            priority=job.spec.priority,
            preemptible=self._preemptible(job.spec),
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
        """States of the jobs a dependency names, from memory: the ids a display id names
        never change, live jobs are in ``self.jobs``, and ended ones are kept until touched."""
        kept = self._job_views
        ids = kept.targets.get(display_id)
        if ids is None:
            if len(kept.targets) > 100_000:  # bound the memory of a long-lived daemon
                kept.targets.clear()
                kept.ended.clear()
            found = self._resolve_one(display_id)
            ids = kept.targets[display_id] = tuple(j.id for j in found)
            kept.ended.update((j.id, j.state) for j in found if j.id not in self.jobs)
        states = []
        for job_id in ids:
            job = self.jobs.get(job_id)
            state = job.state if job is not None else kept.ended.get(job_id)
            if state is None:
                (row,) = self.store.query_jobs(JobQuery(ids=(job_id,)))
                state = kept.ended[job_id] = row.state
            states.append(state)
        return states

    def apply(self, plan: Plan, version: int) -> Orders:
        """Commit a plan's placements that still fit, record reasons, and return launch/kill
        orders. Placements that no longer fit are dropped and re-planned next pass."""
        del version
        used: dict[str, set[int]] = {}
        if plan.placements:
            self._sync_views(self.clock())
            for running in self._job_views.running.values():
                for alloc in running.allocations:
                    used.setdefault(alloc.node, set()).update(alloc.gpu_indices)
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
            if len(allocs) > 1:
                allocs[0].port = self._master_port(job.id, allocs[0].node)
            job.attempt += 1
            job.allocation = allocs
            job.reason = ""
            job.exit_code = None
            job.start_time = None
            job.end_time = None
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
        kept = self._job_views
        new = plan.reasons
        differs = map(ne, new.values(), map(kept.reasons.get, new.keys()))  # C-level scan
        waiting: list[tuple[int, str]] = []
        for job_id, reason in compress(new.items(), differs):
            job = self.jobs.get(job_id)
            if job is not None and job.state is JobState.PENDING and job.reason != reason:
                job.reason = reason
                waiting.append((job_id, reason))
        kept.reasons = dict(plan.reasons)
        kept.starts = dict(plan.est_start)
        if changed or events:
            self._save(changed, events)
        if waiting:  # derived data: written off the core thread, in chunks
            self.store.write_reasons(waiting)
        if changed or events or waiting:
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
