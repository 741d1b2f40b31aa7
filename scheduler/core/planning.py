"""Plan and apply: the snapshot a pass decides on, and committing the plan it returns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeAlloc
from rota.scheduler.core.authz import hold_reason
from rota.scheduler.core.lifecycle import LAUNCH_PREFIX, Lifecycle, Orders
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.snapshot import SnapshotBuilder
from rota.scheduler.policy.snapshot import Allocation, Placement, Plan, Snapshot
from rota.scheduler.store.protocols import JobRepository
from rota.states import JobState


class Planner:
    """Snapshots for the policy (built on the core thread), and applying its plans."""

    def __init__(
        self,
        model: ClusterModel,
        store: JobRepository,
        lifecycle: Lifecycle,
        snapshots: SnapshotBuilder,
        clock: Callable[[], float],
        revoked: Callable[[str], bool] = lambda user: False,
    ) -> None:
        self.model = model
        self.store = store
        self.lifecycle = lifecycle
        self.snapshots = snapshots
        self.clock = clock
        self.revoked = revoked  # whether a user is revoked: their jobs are held, never started

    def snapshot(self) -> Snapshot:
        """The cluster as the next pass sees it (O(changed jobs + nodes))."""
        return self.snapshots.snapshot()

    def place(self, placements: Sequence[Placement]) -> Orders:
        """Commit the placements that still fit (one transaction) and return their launch
        orders; a placement that no longer fits is dropped and re-planned next pass. The
        leading parts of a large plan go through here, each in a core-thread hop of its own.
        A failed commit raises and changes nothing in the model."""
        orders, changed, events = self._place(placements)
        if changed:
            self.model.commit(changed, events)
            self.model.bump()
        return orders

    def apply(self, plan: Plan) -> Orders:
        """Commit a plan's placements that still fit, its preemptions, record reasons and
        estimated starts, and return launch/kill orders. Nothing of the snapshot the plan was
        made from is trusted: each placement and preemption is checked against the model as
        it is now, and one that no longer fits is dropped and re-planned next pass. Commit,
        then swap: the jobs changed are new records, swapped into the model once committed; a
        failed commit raises and changes nothing in the model."""
        jobs = self.model.jobs
        life = self.lifecycle
        orders, changed, events = self._place(plan.placements)
        for job_id in plan.preemptions:
            job = jobs.get(job_id)
            if job is None or job.state not in (JobState.CONFIGURING, JobState.RUNNING):
                continue
            job = replace(job)
            why = plan.preempted_why.get(job_id, "preempted for a higher-priority job")
            events.append(life.transition(job, JobState.COMPLETING, why))
            job.stop_state = JobState.PREEMPTED.value
            changed.append(job)
            orders.extend(life.preempt_orders(job, why))
        if changed or events:
            self.model.commit(changed, events)
        waiting: list[tuple[int, str]] = []
        for job_id, reason in self.snapshots.changed_reasons(plan.reasons):
            job = jobs.get(job_id)
            if job is None or job.state is not JobState.PENDING or job.reason == reason:
                continue
            if job.held and reason != hold_reason(job.held):
                continue  # held after the snapshot: the plan's reason is stale
            job.reason = reason
            waiting.append((job_id, reason))
        self.snapshots.applied(plan.reasons)
        self.model.starts = dict(plan.est_start)
        if waiting:  # derived data: written off the core thread, in chunks
            self.store.write_reasons(waiting)
        if changed or events or waiting:
            self.model.bump()
        return orders

    def _place(
        self, placements: Sequence[Placement]
    ) -> tuple[Orders, list[JobRecord], list[JobEvent]]:
        """Move the pending jobs of ``placements`` that still fit to CONFIGURING (not yet
        stored): their launch orders, the changed jobs and their events."""
        jobs = self.model.jobs
        life = self.lifecycle
        used: dict[str, set[int]] = {}
        if placements:
            self.snapshots.sync(self.clock())
            for running in self.snapshots.running():
                for held in running.allocations:
                    used.setdefault(held.node, set()).update(held.gpu_indices)
        orders: Orders = []
        changed: list[JobRecord] = []
        events: list[JobEvent] = []
        for placement in placements:
            job = jobs.get(placement.job_id)
            if job is None or job.state is not JobState.PENDING or job.held:
                continue
            job = replace(job)  # swapped into the model once committed
            if self.revoked(job.user):  # planned before the revocation, or from before it
                events.append(life.hold_revoked(job))
                changed.append(job)
                continue
            allocs = self._check_placement(placement.allocations, used)
            if allocs is None:
                continue
            for alloc in allocs:
                used.setdefault(alloc.node, set()).update(alloc.gpus)
            if len(allocs) > 1:
                allocs[0].port = life.master_port(job.id, allocs[0].node, changed)
            job.attempt += 1
            job.allocation = allocs
            job.partition = self._partition_of(job, allocs)
            job.ranks_ended = ()
            self._fit_window(job, placement.deadline)
            job.reason = ""
            job.warning = ""  # a new attempt starts without the old one's warnings
            job.exit_code = None
            job.start_time = None
            job.end_time = None
            where = ",".join(a.node for a in allocs)
            events.append(life.transition(job, JobState.CONFIGURING, LAUNCH_PREFIX + where))
            changed.append(job)
            orders.extend(life.launch_orders(job))
        return orders, changed, events

    def _partition_of(self, job: JobRecord, allocs: Sequence[NodeAlloc]) -> str:
        """The first of the job's partitions holding every node it was placed on ("" when
        it names none, or none does)."""
        views = [self.snapshots.node_view(self.model.nodes[a.node]) for a in allocs]
        for name in job.spec.partition.split(",") if job.spec.partition else ():
            if all(name in v.partitions for v in views):
                return name
        return ""

    def _fit_window(self, job: JobRecord, deadline: float) -> None:
        """Cut the job's time limit so that it ends (TIMEOUT) by the placement's ``deadline``
        (its reservation window's end, as the policy computed it; 0: none)."""
        now = self.clock()
        if deadline and now + job.time_limit > deadline:
            job.time_limit = max(deadline - now, 1.0)

    def _check_placement(
        self, allocations: Sequence[Allocation], used: dict[str, set[int]]
    ) -> list[NodeAlloc] | None:
        out: list[NodeAlloc] = []
        for alloc in allocations:
            node = self.model.nodes.get(alloc.node)
            if node is None or not node.schedulable:
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
