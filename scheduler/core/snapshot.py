"""The snapshot builder: the frozen view of the cluster a scheduling pass decides on.

It costs O(changed jobs + nodes): job views are kept between passes (``views``), and so is one
view per node, reused while the node's inventory, labels, broken GPUs, schedulability and the
GPUs that GPU health blocks are the same. GPU health is an explicit input (``GpuBlocks``), so
the builder never reaches into the GPU service's state.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import compress
from operator import ne
from typing import Protocol

from rota.constraint import parse_constraint
from rota.hostlist import expand
from rota.jobspec import JobSpec, parse_array, parse_dependency
from rota.messages import GpuTelemetry, Inventory
from rota.scheduler.cluster.model import JobRecord, NodeState
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.authz import hold_reason
from rota.scheduler.core.lookup import JobLookup
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.usage import UsageBook
from rota.scheduler.core.views import JobViews
from rota.scheduler.policy import reasons
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.partitions import PartitionTable
from rota.scheduler.policy.snapshot import (
    Allocation,
    GpuView,
    NodeView,
    PendingJob,
    ReservationView,
    RunningJob,
    Snapshot,
)
from rota.scheduler.policy.usage import Usage
from rota.scheduler.store.protocols import JobQuery
from rota.states import ACTIVE_STATES, JobState


class GpuBlocks(Protocol):
    """Which GPUs of a node take no jobs (unhealthy, dirty, busy); the same object while
    nothing about them changed."""

    def blocked(self, node: str) -> frozenset[int]: ...


@dataclass(slots=True)
class _DependencyMemo:
    """What one ``sync`` learnt about dependencies, so that each is worked out once per pass
    however many pending jobs name it: the verdict of each ``(kind, display id)`` (satisfied,
    never satisfiable), the reason of each dependency text without ``singleton``, and the
    lowest id of a live job of each (user, name)."""

    outcomes: dict[tuple[str, str], tuple[bool, bool]] = field(default_factory=dict)
    texts: dict[str, str | None] = field(default_factory=dict)
    namesakes: dict[tuple[str, str], int] | None = None


@dataclass(slots=True)
class _NodeEntry:
    """A kept node view and what it was built from."""

    inventory: Inventory
    labels: dict[str, str]
    telemetry: tuple[GpuTelemetry, ...]
    broken: frozenset[int]  # GPUs whose telemetry reports an error
    schedulable: bool
    blocked: frozenset[int]
    view: NodeView


class SnapshotBuilder:
    """Builds snapshots from the model; owns the kept job views and the node-view cache."""

    def __init__(
        self,
        model: ClusterModel,
        lookup: JobLookup,
        gpus: GpuBlocks,
        usage: UsageBook,
        config: SchedulerConfig,
        policy_config: PolicyConfig,
        clock: Callable[[], float],
        reservations: Callable[[float], tuple[ReservationView, ...]] = lambda now: (),
        partitions: PartitionTable | None = None,
    ) -> None:
        self.model = model
        self.partitions = partitions or PartitionTable()
        self.reservations = reservations
        self.lookup = lookup
        self.gpus = gpus
        self.usage = usage
        self.config = config
        self.policy_config = policy_config
        self.clock = clock
        self.views = JobViews(set())
        self._nodes: dict[str, _NodeEntry] = {}
        self._node_tuple: tuple[NodeView, ...] = ()
        self._usage_view: Usage | None = None
        self._deps: _DependencyMemo | None = None  # during ``sync`` only

    def snapshot(self, extra: Iterable[JobRecord] = ()) -> Snapshot:
        """A frozen view of the cluster for one pass (``extra`` adds probe jobs for dry runs).
        With no job pending it lists no node: there is nothing to place, and every hello or
        node change asks for a pass, which would otherwise cost O(nodes) each."""
        now = self.clock()
        self.sync(now)
        kept = self.views
        pending = kept.pending_jobs()
        probes = [
            self.pending_view(job, self.blocked(job, now))
            for job in extra
            if job.state is JobState.PENDING
        ]
        return Snapshot(
            now=now,
            nodes=self._node_views() if pending or probes else (),
            pending=(*pending, *probes) if probes else pending,
            running=kept.running_jobs(),
            version=self.model.version,
            usage=self._published_usage(now),
            config=self.policy_config,
            reservations=self.reservations(now),
            names_reservation=bool(kept.named) or any(p.reservation for p in probes),
        )

    def forget(self) -> None:
        """Drop every kept view (the next snapshot rebuilds them all)."""
        self.views = JobViews(set(self.model.jobs))
        self._nodes.clear()

    def take_changes(self) -> None:
        """Move the ids the model marked changed into the kept views' dirty set."""
        changed = self.model.take_changed()
        if changed:
            self.views.touch(changed)

    def sync(self, now: float) -> None:
        """Rebuild the kept views of jobs that changed, and of volatile pending jobs whose
        inputs (what ``blocked`` says, the time limit, the attempt) are no longer the same."""
        self.take_changes()
        kept = self.views
        ids = kept.dirty | kept.volatile if kept.volatile else kept.dirty
        kept.dirty = set()
        self._deps = _DependencyMemo()
        try:
            self._sync_jobs(ids, now)
        finally:
            self._deps = None

    def _sync_jobs(self, ids: Iterable[int], now: float) -> None:
        kept = self.views
        jobs = self.model.jobs
        for job_id in ids:
            job = jobs.get(job_id)
            if job is None:
                kept.drop(job_id)
            elif job.state is JobState.PENDING:
                blocked = self.blocked(job, now)
                key: tuple[object, ...] = ("P", blocked, job.time_limit, job.attempt)
                if kept.keys.get(job_id) != key or job_id not in kept.pending:
                    kept.keep_pending(job_id, key, self.pending_view(job, blocked))
                begin = job.spec.begin_time
                if job.spec.dependency or (begin and begin > now):
                    kept.volatile.add(job_id)
                else:
                    kept.volatile.discard(job_id)
            elif job.state in ACTIVE_STATES:
                key = ("R", job.state, job.start_time, job.stop_state, job.attempt)
                if kept.keys.get(job_id) != key or job_id not in kept.running:
                    kept.keep_running(job_id, key, self.running_view(job, now))
                kept.volatile.discard(job_id)
            else:
                kept.drop(job_id)

    def running(self) -> Iterable[RunningJob]:
        """The kept running views, current after ``sync``."""
        return self.views.running.values()

    def changed_reasons(self, new: Mapping[int, str]) -> Iterator[tuple[int, str]]:
        """The (job id, reason) pairs of ``new`` that differ from the reasons last applied
        (``take_changes`` first, so that a changed job's reason is always written)."""
        self.take_changes()
        last = self.views.reasons
        differs = map(ne, new.values(), map(last.get, new.keys()))  # C-level scan
        return compress(new.items(), differs)

    def applied(self, applied_reasons: Mapping[int, str]) -> None:
        """Remember the reasons of the plan just applied."""
        self.views.reasons = dict(applied_reasons)

    # ------------------------------------------------------------ nodes

    def node_view(self, node: NodeState) -> NodeView:
        """The policy's view of ``node``: GPUs with errors or blocked by GPU health are not
        allocatable. The same object while nothing it shows changed."""
        schedulable = node.schedulable
        blocked = self.gpus.blocked(node.name)
        hit = self._nodes.get(node.name)
        if (
            hit is not None
            and hit.inventory is node.inventory
            and hit.labels is node.labels
            and hit.schedulable == schedulable
            and (hit.blocked is blocked or hit.blocked == blocked)
        ):
            if hit.telemetry is node.telemetry:
                return hit.view
            broken = _broken(node.telemetry)
            if broken == hit.broken:
                hit.telemetry = node.telemetry
                return hit.view
        else:
            broken = _broken(node.telemetry)
        unusable = broken | blocked
        inventory = node.inventory
        labels = {**inventory.labels, **node.labels}
        view = NodeView(
            name=node.name,
            gpus=tuple(
                GpuView(g.index, g.name, g.memory_total, allocatable=g.index not in unusable)
                for g in inventory.gpus
            ),
            cpus=inventory.cpus,
            memory=inventory.memory,
            labels=labels,
            schedulable=schedulable,
            links={(min(x.a, x.b), max(x.a, x.b)): x.level for x in inventory.links if x.a != x.b},
            partitions=self.partitions.of_node(node.name, labels),
        )
        self._nodes[node.name] = _NodeEntry(
            inventory, node.labels, node.telemetry, broken, schedulable, blocked, view
        )
        return view

    def _node_views(self) -> tuple[NodeView, ...]:
        """Every node's view as a tuple, the previous tuple object when all are the same."""
        fresh = tuple(self.node_view(n) for n in self.model.nodes.values())
        if fresh != self._node_tuple:
            self._node_tuple = fresh
        return self._node_tuple

    # ------------------------------------------------------------ jobs

    def pending_view(self, job: JobRecord, blocked: str | None) -> PendingJob:
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
            reservation=spec.reservation,
            partitions=tuple(spec.partition.split(",")) if spec.partition else (),
            priority_tier=self.partitions.tier(spec.partition),
            checkpointable=spec.checkpointable,
            attained=job.attained,
            nodelist=frozenset(expand(spec.nodelist)) if spec.nodelist else frozenset(),
            exclude=frozenset(expand(spec.exclude)) if spec.exclude else frozenset(),
            constraint=parse_constraint(spec.constraint) if spec.constraint else None,
            interactive=spec.interactive,
        )

    def running_view(self, job: JobRecord, now: float) -> RunningJob:
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
            reservation=job.spec.reservation,
            checkpointable=job.spec.checkpointable,
            attained=job.attained,
            preempted_at=job.preempted_at,
            submit_time=job.submit_time,
            partition=job.partition,
            interactive=job.spec.interactive,
        )

    def _preemptible(self, spec: JobSpec) -> bool:
        """Flagged ``preemptible``, or of a QoS class the config makes preemptible."""
        return spec.preemptible or spec.qos in self.config.preemptible_qos

    def _published_usage(self, now: float) -> Usage:
        """The ledger's view, republished at most once per ``priority_period`` so that the
        policy's cached priorities stay valid in between."""
        published = self._usage_view
        if published is None or now - published.as_of >= self.policy_config.priority_period:
            published = self._usage_view = self.usage.ledger.view(now)
        return published

    def blocked(self, job: JobRecord, now: float) -> str | None:
        """Why ``job`` may not start whatever the resources (held, begin time, dependency)."""
        if job.held:
            return hold_reason(job.held)
        if job.spec.begin_time and job.spec.begin_time > now:
            return reasons.BEGIN_TIME
        if job.spec.dependency:
            return self._dependency_reason(job, job.spec.dependency)
        return None

    def _dependency_reason(self, job: JobRecord, text: str) -> str | None:
        """Never satisfiable when any clause can never be; waiting when any is not yet
        satisfied. During ``sync`` each text, and each (kind, id) of one, is worked out once
        (the array tasks of one spec share their text; ``afterok:A:A:...`` names A once)."""
        memo = self._deps
        singleton = "singleton" in text
        if memo is not None and not singleton and text in memo.texts:
            return memo.texts[text]
        waiting = False
        reason: str | None = None
        for kind, ids in parse_dependency(text):
            if kind == "singleton":
                waiting = waiting or self._earlier_namesake(job)
            for display_id in ids:
                ok, never = self._outcome(kind, display_id)
                if never:
                    reason = reasons.DEPENDENCY_NEVER_SATISFIED
                    break
                waiting = waiting or not ok
            if reason is not None:
                break
        else:
            reason = reasons.DEPENDENCY if waiting else None
        if memo is not None and not singleton:
            memo.texts[text] = reason
        return reason

    def _outcome(self, kind: str, display_id: str) -> tuple[bool, bool]:
        """(satisfied, never satisfiable) of ``kind`` on every job ``display_id`` names."""
        memo = self._deps
        key = (kind, display_id)
        if memo is not None and key in memo.outcomes:
            return memo.outcomes[key]
        ok, never = True, False
        for state in self._target_states(display_id):
            one_ok, one_never = _dependency_outcome(kind, state)
            ok, never = ok and one_ok, never or one_never
            if never:
                break
        if memo is not None:
            memo.outcomes[key] = (ok, never)
        return ok, never

    def _earlier_namesake(self, job: JobRecord) -> bool:
        """``singleton``: an earlier job of the same name and user has not ended (live jobs
        are the model's; ended ones have left it). During ``sync`` the live jobs are indexed
        once, by (user, name)."""
        memo = self._deps
        if memo is None:
            return any(
                other.id < job.id
                and other.user == job.user
                and other.name == job.name
                and not other.state.terminal
                for other in self.model.jobs.values()
            )
        if memo.namesakes is None:
            first: dict[tuple[str, str], int] = {}
            for other in self.model.jobs.values():
                if not other.state.terminal:
                    key = (other.user, other.name)
                    first[key] = min(first.get(key, other.id), other.id)
            memo.namesakes = first
        return memo.namesakes.get((job.user, job.name), job.id) < job.id

    def _target_states(self, display_id: str) -> list[JobState]:
        """States of the jobs a dependency names, from memory: the ids a display id names
        never change, live jobs are in the model, and ended ones are kept until touched."""
        kept = self.views
        jobs = self.model.jobs
        ids = kept.targets.get(display_id)
        if ids is None:
            if len(kept.targets) > 100_000:  # bound the memory of a long-lived daemon
                kept.targets.clear()
                kept.ended.clear()
            found = self.lookup.resolve(display_id)
            ids = kept.targets[display_id] = tuple(j.id for j in found)
            kept.ended.update((j.id, j.state) for j in found if j.id not in jobs)
        states = []
        for job_id in ids:
            job = jobs.get(job_id)
            state = job.state if job is not None else kept.ended.get(job_id)
            if state is None:
                (row,) = self.lookup.store.query(JobQuery(ids=(job_id,)))
                state = kept.ended[job_id] = row.state
            states.append(state)
        return states


def _broken(telemetry: tuple[GpuTelemetry, ...]) -> frozenset[int]:
    return frozenset(t.index for t in telemetry if t.error)


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


@functools.lru_cache(maxsize=1024)
def array_task_limit(text: str) -> int:
    """The ``%`` limit of an ``array:`` value (0: none)."""
    return parse_array(text)[1] or 0
