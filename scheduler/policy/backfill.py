"""The pass every queue policy shares: jobs in a given order, conservative backfill, reasons.

Jobs are taken in the policy's order. A job that fits now (``state.ClusterState.find``:
enough free resources that no reservation needs before its time limit ends) starts on the
best-fit nodes. The first ``backfill_depth`` jobs that do not fit get a reservation at their
earliest start (``Plan.est_start``), which every later job must leave intact; with backfill
off (strict FIFO) nothing behind the first blocked job starts. With ``full_reasons`` off,
reservations are computed only once a later job could start, since only then can they
change the plan (the plan is the same; estimates are missing). Reasons: the service's
``blocked`` reason, else a limit, else ``Resources`` for the first job that waits for
resources and ``Priority`` for those behind it, ``NodeDown`` / ``BadConstraints`` when no
schedulable / registered node could ever run it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rota.scheduler.policy import reasons
from rota.scheduler.policy.attained import AttainedQueues
from rota.scheduler.policy.earliest import earliest_start
from rota.scheduler.policy.fit import node_matches, same_alternative
from rota.scheduler.policy.limits import LimitCounter
from rota.scheduler.policy.node_state import INF, NodeState
from rota.scheduler.policy.preemption import Preemptor
from rota.scheduler.policy.queue import OrderCache
from rota.scheduler.policy.snapshot import (
    Allocation,
    NodeView,
    PendingJob,
    Placement,
    Plan,
    RunningJob,
    Snapshot,
)
from rota.scheduler.policy.state import ClusterState, ConstraintKey, constraint_key
from rota.scheduler.policy.state_cache import StateCache

Duration = Callable[[PendingJob], float]
RunningEnd = Callable[[RunningJob], float]
_Size = tuple[int, float, int]  # gpus, cpus, memory


class _Loop:
    """What a pass carries from one job to the next; kept after the pass so that the next
    pass may resume it (see ``run_pass``)."""

    __slots__ = (
        "changes",
        "deferred",
        "depth",
        "est",
        "failed",
        "frozen",
        "generation",
        "last_change",
        "limits",
        "placed",
        "placements",
        "plain_failed",
        "preempted",
        "preemptor",
        "reserve_blocked",
        "reserved",
        "snapshot",
        "tested",
        "waiting",
        "why",
    )

    def __init__(
        self,
        snapshot: Snapshot,
        limits: LimitCounter,
        preemptor: Preemptor | None,
        width: int,
        generation: int,
        depth: int,
        reserve_blocked: bool,
    ) -> None:
        self.snapshot = snapshot
        self.depth = depth  # blocked jobs that get a reservation (or try preemption)
        self.reserve_blocked = reserve_blocked  # False: they try preemption only
        self.generation = generation  # of the queue order the pass ran on
        self.limits = limits
        self.preemptor = preemptor
        self.placements: list[Placement] = []
        self.placed: set[int] = set()
        self.preempted: list[int] = []
        self.why: dict[int, str] = {}
        self.est: dict[int, float] = {}
        self.failed: dict[tuple[object, int, bool], dict[_Size, float]] = {}
        # Shortest time limit of a plain job (one node, no constraints) that did not fit,
        # per GPU count and above: such jobs fail fast without a search.
        self.plain_failed = [INF] * (width + 1)
        self.deferred: list[tuple[PendingJob, ConstraintKey, float]] = []
        self.reserved = 0
        self.waiting = False  # an eligible job ahead waits for resources
        self.frozen = False  # strict FIFO: the first blocked job stops everything behind it
        self.tested = 0
        self.changes = 0  # placements, reservations and flag changes so far
        self.last_change: PendingJob | None = None  # the last job that made one

    def plan(self) -> Plan:
        return Plan(
            placements=tuple(self.placements),
            preemptions=tuple(self.preempted),
            preempted_why={} if self.preemptor is None else dict(self.preemptor.why),
            reasons=self.why,
            est_start=self.est,
        )

    def resumed(self, snapshot: Snapshot, generation: int) -> _Loop:
        """A copy for the next pass: what the last plan handed out is copied, the rest is
        taken over (this loop is not used again)."""
        loop = _Loop.__new__(_Loop)
        for name in _Loop.__slots__:
            setattr(loop, name, getattr(self, name))
        loop.snapshot, loop.generation = snapshot, generation
        loop.why, loop.est = dict(self.why), dict(self.est)
        loop.placements, loop.preempted = list(self.placements), list(self.preempted)
        return loop


def run_pass(
    snapshot: Snapshot,
    ordered: Iterable[PendingJob],
    *,
    duration: Duration | None,
    running_end: RunningEnd,
    backfill: bool = True,
    preemption: bool = False,
    cache: StateCache | None = None,
    end_key: object = None,
    max_job_test: int = 0,
    queue: OrderCache | None = None,
    depth: int | None = None,
    reserve_blocked: bool = True,
    queues: AttainedQueues | None = None,
    by_class: bool = True,
) -> Plan:
    """Plan one pass over ``ordered`` (every pending job, highest priority first).

    ``duration`` is how long a pending job is assumed to run once started (None: its time
    limit, ``config.limit_of``) and ``running_end`` when a running job is assumed to end
    (time limits, or true durations for the oracle). ``cache`` keeps the cluster state
    between passes (``end_key`` names what ``running_end`` computes). ``max_job_test`` > 0
    caps how many eligible jobs are tested (SLURM's ``bf_max_job_test``): later ones wait
    with ``Priority`` untested. ``queue``: the ``OrderCache`` whose ``jobs`` list
    ``ordered`` is, for bulk reasons and resumed passes. ``depth``: how many blocked jobs get a
    reservation (None: ``config.backfill_depth``, 1 without backfill); with
    ``reserve_blocked`` False they only try preemption (a greedy, work-conserving pass).
    ``queues``: attained-service queues that may preempt (``attained.py``); ``by_class``: the
    (QoS, priority) preemption rule applies.

    A resumed pass: when the only change since the cached pass is new submissions (same
    nodes, running jobs, ``now``, usage and config), each placed after the last job that
    changed anything in that pass (placement, reservation, a flag), the jobs before them
    would be decided exactly as before and the state they meet is that pass's final state.
    The new jobs are then examined against it; the first one that changes anything
    continues the pass over every job behind it. The plan equals a fresh pass's.
    """
    todo = ordered if isinstance(ordered, list) else list(ordered)
    if not todo:  # nothing to place: no cluster state to build (O(nodes)) for an empty plan
        return Plan()
    args = (duration, running_end, backfill, preemption, max_job_test, queue)
    rules = _Rules(
        depth if depth is not None else snapshot.config.backfill_depth if backfill else 1,
        reserve_blocked,
        queues,
        by_class,
    )
    if cache is None:
        state = ClusterState(snapshot.nodes, snapshot.running, snapshot.now, running_end)
        loop = _new_loop(snapshot, state, running_end, preemption, queue, rules)
        _pass(snapshot, todo, 0, state, loop, *args)
        return loop.plan()
    resumable = _resumable(snapshot, cache, end_key, todo, max_job_test, queue)
    if resumable is not None:
        state, loop, new = resumable
        stop = _pass(snapshot, new, 0, state, loop, *args, stop_on_change=True)
        if stop is not None:
            assert queue is not None
            at = bisect_left(queue.keys, queue.entries[new[stop].id][1]) + 1
            # every job behind it again, one by one (no bulk: their old reasons are still in)
            _pass(snapshot, todo, at, state, loop, *args[:-1], None)
    else:
        state = cache.acquire(snapshot.nodes, snapshot.running, snapshot.now, end_key, running_end)
        loop = _new_loop(snapshot, state, running_end, preemption, queue, rules)
        _pass(snapshot, todo, 0, state, loop, *args)
    # not reached when the pass raised: the state is dropped
    cache.release(state, loop if snapshot.full_reasons else None)
    return loop.plan()


@dataclass(frozen=True, slots=True)
class _Rules:
    depth: int
    reserve_blocked: bool
    queues: AttainedQueues | None
    by_class: bool


def _new_loop(
    snapshot: Snapshot,
    state: ClusterState,
    running_end: RunningEnd,
    preemption: bool,
    queue: OrderCache | None,
    rules: _Rules,
) -> _Loop:
    cfg = snapshot.config
    limits = LimitCounter(cfg.limits, snapshot.running, snapshot.pending)
    preemptor = (
        Preemptor(state, snapshot.running, cfg, running_end, rules.queues, rules.by_class)
        if preemption and cfg.preemption
        else None
    )
    generation = queue.generation if queue is not None else -1
    return _Loop(
        snapshot,
        limits,
        preemptor,
        len(state.buckets),
        generation,
        rules.depth,
        rules.reserve_blocked,
    )


def _resumable(
    snapshot: Snapshot,
    cache: StateCache,
    end_key: object,
    todo: list[PendingJob],
    max_job_test: int,
    queue: OrderCache | None,
) -> tuple[ClusterState, _Loop, list[PendingJob]] | None:
    """(state, loop, new jobs in order) when this pass may resume the cached one."""
    kept = cache.run
    if kept is None or queue is None or todo is not queue.jobs or max_job_test:
        return None
    assert isinstance(kept, _Loop)
    old = kept.snapshot
    assert isinstance(old, Snapshot)
    if not (
        snapshot.full_reasons
        and snapshot.now == old.now
        and (snapshot.nodes is old.nodes or snapshot.nodes == old.nodes)
        and (snapshot.running is old.running or snapshot.running == old.running)
        and (snapshot.usage is old.usage or snapshot.usage == old.usage)
        and (snapshot.config is old.config or snapshot.config == old.config)
        and (end_key is cache.end_key or end_key == cache.end_key)
        and not kept.limits.active
    ):
        return None
    if queue.generation == kept.generation:
        new: list[PendingJob] = []
    elif queue.generation == kept.generation + 1 and queue.last_added is not None:
        new = sorted(queue.last_added, key=lambda job: queue.entries[job.id][1])
    else:
        return None
    if new and kept.last_change is not None:
        horizon = queue.entries.get(kept.last_change.id)
        if horizon is None or queue.entries[new[0].id][1] <= horizon[1]:
            return None
    if not kept.limits.admit_pending(new):
        return None
    state = cache.resume()
    if state is None:
        return None
    return state, kept.resumed(snapshot, queue.generation), new


def _pass(
    snapshot: Snapshot,
    todo: list[PendingJob],
    i: int,
    state: ClusterState,
    loop: _Loop,
    duration: Duration | None,
    running_end: RunningEnd,
    backfill: bool,
    preemption: bool,
    max_job_test: int,
    queue: OrderCache | None,
    stop_on_change: bool = False,
) -> int | None:
    """Decide ``todo[i:]`` in order, carrying ``loop``. With ``stop_on_change``, return the
    index of the first job that changed anything (after deciding it); else None."""
    cfg = snapshot.config
    now = snapshot.now
    limits, preemptor = loop.limits, loop.preemptor
    depth = loop.depth
    placements, placed, preempted = loop.placements, loop.placed, loop.preempted
    why, est, failed, deferred = loop.why, loop.est, loop.failed, loop.deferred
    plain_failed = loop.plain_failed
    reserved, waiting, frozen, tested = loop.reserved, loop.waiting, loop.frozen, loop.tested
    changes, last_change = loop.changes, loop.last_change
    stopped: int | None = None

    def reserve(job: PendingJob, key: ConstraintKey, length: float) -> None:
        start, nodes = earliest_start(state, job, key, length)
        if start < INF:
            state.reserve(nodes, -1 if job.exclusive else job.gpus, start, start + length)
            est[job.id] = start

    check_limits = limits.active
    default_limit = cfg.default_time_limit
    full = snapshot.full_reasons
    # Bulk reasons (see ``bulk_reasons``) need the queue's record of special jobs.
    bulk = (
        queue is not None and todo is queue.jobs and full and not check_limits and not max_job_test
    )
    n = len(todo)
    seen = changes
    while i < n:
        if stop_on_change and changes != seen:
            stopped = i - 1
            break
        job = todo[i]
        i += 1
        if bulk and state.total_free == 0 and (frozen or (waiting and reserved >= depth)):
            assert queue is not None
            specials = bulk_reasons(todo, i - 1, queue, state, why, placed)
            bulk = False
            if specials is not None:
                todo, i, n = specials, 0, len(specials)
                continue
        if job.blocked is not None:
            why[job.id] = job.blocked
            continue
        if check_limits or job.array_task_limit:
            limit_reason = limits.check(job)
            if limit_reason is not None:
                why[job.id] = limit_reason
                continue
        if frozen:
            if not full:
                break
            why[job.id] = reasons.PRIORITY
            continue
        if not full and state.total_free == 0 and (preemptor is None or not preemptor.possible):
            break
        if max_job_test:
            if tested >= max_job_test:
                if not full:
                    break
                why[job.id] = reasons.PRIORITY
                continue
            tested += 1
        if duration is None:
            length = job.time_limit if job.time_limit > 0 else default_limit
        else:
            length = duration(job)
        plain = (
            job.nodes == 1
            and job.gpus < len(plain_failed)
            and not (job.exclusive or job.cpus or job.memory)
            and not (job.gpu_type or job.gpu_memory or job.node_selector or job.partitions)
            and not (job.nodelist or job.exclude or job.constraint)
        )
        key = None if plain else constraint_key(job)
        if plain:
            misfit = length >= plain_failed[job.gpus]
        else:
            known = failed.get((key, job.nodes, job.exclusive))
            misfit = known is not None and _known_misfit(
                known, (job.gpus, job.cpus, job.memory), length
            )
        if not misfit:
            nodes = state.find(job, key, now + length)
            if nodes is not None and deferred:
                for args in deferred:
                    reserve(*args)
                deferred.clear()
                nodes = state.find(job, key, now + length)
            if nodes is not None:
                allocs = []
                for node in nodes:
                    gpus = state.gpus_for(job, node, key)
                    state.take(
                        node, gpus, job.cpus, job.memory, job.exclusive, now + length, job.id
                    )
                    allocs.append(Allocation(node.view.name, gpus, job.cpus, job.memory))
                placements.append(Placement(job.id, tuple(allocs)))
                placed.add(job.id)
                limits.add(job)
                changes += 1
                last_change = job
                continue
            if plain:
                for g in range(job.gpus, len(plain_failed)):
                    plain_failed[g] = min(plain_failed[g], length)
            else:
                known = failed.setdefault((key, job.nodes, job.exclusive), {})
                size = (job.gpus, job.cpus, job.memory)
                known[size] = min(length, known.get(size, INF))
        if not full and reserved >= depth:
            continue  # no reason wanted, no reservation to make
        if same_alternative(job, state.matching(job, key), _view) is None:
            every = [n for n in snapshot.nodes if node_matches(job, n)]
            capable = same_alternative(job, every, _self) is not None
            why[job.id] = reasons.NODE_DOWN if capable else reasons.BAD_CONSTRAINTS
            continue
        why[job.id] = reasons.PRIORITY if waiting else reasons.RESOURCES
        if not waiting:
            waiting = True
            changes += 1
            last_change = job
        if reserved >= depth:
            continue
        reserved += 1
        changes += 1
        last_change = job
        if preemptor is not None and preemptor.possible:
            for args in deferred:
                reserve(*args)
            deferred.clear()
            plan = preemptor.plan(job, key, length)
            if plan is not None:
                victims, nodes = plan
                preempted.extend(victims)
                state.reserve(nodes, -1 if job.exclusive else job.gpus, now, now + length)
                est[job.id] = now
                continue
        if loop.reserve_blocked:  # else greedy: later jobs may take what this one waits for
            if snapshot.full_reasons:
                reserve(job, key, length)
            else:  # only needed if a later job would otherwise start
                deferred.append((job, key, length))
        frozen = not backfill
    else:
        if stop_on_change and changes != seen:
            stopped = n - 1
    loop.reserved, loop.waiting, loop.frozen, loop.tested = reserved, waiting, frozen, tested
    loop.changes, loop.last_change = changes, last_change
    return stopped


def bulk_reasons(
    todo: list[PendingJob],
    start: int,
    queue: OrderCache,
    state: ClusterState,
    why: dict[int, str],
    placed: set[int],
) -> list[PendingJob] | None:
    """Reasons for every simple job from ``todo[start]`` on, once nothing more can start.

    Called when no GPU is free, every reservation is made and a job ahead waits (or strict
    FIFO stopped): a simple job (``queue.simple``: one node, at least one GPU, nothing else
    that could hold it) then cannot start, gets no reservation and waits with ``Priority``,
    unless no schedulable node has enough GPUs (then the per-job path names it). Returns the
    special jobs left, in queue order, for the per-job path; None to go on job by job.
    """
    most = max((g for g, count in queue.simple_gpus.items() if count > 0), default=0)
    widest = max((len(n.view.gpus) for n in state.nodes if n.view.schedulable), default=0)
    if most > widest:
        return None
    special = queue.special
    left = [job for job_id, job in special.items() if job_id not in why and job_id not in placed]
    entries = queue.entries
    left.sort(key=lambda job: entries[job.id][1])
    rest = todo[start:]
    if special:
        why.update(dict.fromkeys([j.id for j in rest if j.id not in special], reasons.PRIORITY))
    else:
        why.update(dict.fromkeys([j.id for j in rest], reasons.PRIORITY))
    return left


def _known_misfit(known: dict[_Size, float], size: _Size, length: float) -> bool:
    """Whether a job no smaller and no shorter than this one already failed to fit.

    Within a pass resources only shrink, so such a job cannot fit either.
    """
    gpus, cpus, memory = size
    for (g, c, m), shortest in known.items():
        if gpus >= g and cpus >= c and memory >= m and length >= shortest:
            return True
    return False


def _view(node: NodeState) -> NodeView:
    return node.view


def _self(node: NodeView) -> NodeView:
    return node
