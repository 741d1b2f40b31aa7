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

from collections.abc import Callable, Iterable

from rota.scheduler.policy import reasons
from rota.scheduler.policy.fit import node_matches
from rota.scheduler.policy.limits import LimitCounter
from rota.scheduler.policy.preemption import Preemptor
from rota.scheduler.policy.snapshot import (
    Allocation,
    PendingJob,
    Placement,
    Plan,
    RunningJob,
    Snapshot,
)
from rota.scheduler.policy.state import INF, ClusterState, ConstraintKey, constraint_key

Duration = Callable[[PendingJob], float]
RunningEnd = Callable[[RunningJob], float]
_Size = tuple[int, float, int]  # gpus, cpus, memory


def run_pass(
    snapshot: Snapshot,
    ordered: Iterable[PendingJob],
    *,
    duration: Duration,
    running_end: RunningEnd,
    backfill: bool = True,
    preemption: bool = False,
) -> Plan:
    """Plan one pass over ``ordered`` (every pending job, highest priority first).

    ``duration`` is how long a pending job is assumed to run once started and
    ``running_end`` when a running job is assumed to end (time limits, or true durations for
    the oracle).
    """
    cfg = snapshot.config
    now = snapshot.now
    state = ClusterState(snapshot.nodes, snapshot.running, now, running_end)
    limits = LimitCounter(cfg.limits, snapshot.running, snapshot.pending)
    preemptor = (
        Preemptor(state, snapshot.running, cfg, running_end)
        if preemption and cfg.preemption
        else None
    )
    depth = cfg.backfill_depth if backfill else 1
    placements: list[Placement] = []
    preempted: list[int] = []
    why: dict[int, str] = {}
    est: dict[int, float] = {}
    failed: dict[tuple[object, int, bool], dict[_Size, float]] = {}
    deferred: list[tuple[PendingJob, ConstraintKey, float]] = []
    reserved = 0
    waiting = False  # an eligible job ahead waits for resources
    frozen = False  # strict FIFO: the first blocked job stops everything behind it

    def reserve(job: PendingJob, key: ConstraintKey, length: float) -> None:
        start, nodes = state.earliest(job, key, length)
        if start < INF:
            state.reserve(nodes, -1 if job.exclusive else job.gpus, start, start + length)
            est[job.id] = start

    check_limits = limits.active
    full = snapshot.full_reasons
    # Shortest time limit of a plain job (one node, no constraints) that did not fit, per
    # GPU count and above: such jobs fail fast without a search.
    plain_failed = [INF] * (len(state.buckets) + 1)
    for job in ordered:
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
        length = duration(job)
        plain = (
            job.nodes == 1
            and job.gpus < len(plain_failed)
            and not (job.exclusive or job.cpus or job.memory)
            and not (job.gpu_type or job.gpu_memory or job.node_selector)
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
                    state.take(node, gpus, job.cpus, job.memory, job.exclusive, now + length)
                    allocs.append(Allocation(node.view.name, gpus, job.cpus, job.memory))
                placements.append(Placement(job.id, tuple(allocs)))
                limits.add(job)
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
        if len(state.matching(job, key)) < job.nodes:
            capable = sum(node_matches(job, n) for n in snapshot.nodes) >= job.nodes
            why[job.id] = reasons.NODE_DOWN if capable else reasons.BAD_CONSTRAINTS
            continue
        why[job.id] = reasons.PRIORITY if waiting else reasons.RESOURCES
        waiting = True
        if reserved >= depth:
            continue
        reserved += 1
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
        if snapshot.full_reasons:
            reserve(job, key, length)
        else:  # only needed if a later job would otherwise start
            deferred.append((job, key, length))
        frozen = not backfill
    return Plan(
        placements=tuple(placements),
        preemptions=tuple(preempted),
        reasons=why,
        est_start=est,
    )


def _known_misfit(known: dict[_Size, float], size: _Size, length: float) -> bool:
    """Whether a job no smaller and no shorter than this one already failed to fit.

    Within a pass resources only shrink, so such a job cannot fit either.
    """
    gpus, cpus, memory = size
    for (g, c, m), shortest in known.items():
        if gpus >= g and cpus >= c and memory >= m and length >= shortest:
            return True
    return False
