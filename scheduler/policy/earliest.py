"""Earliest starts of blocked jobs in a ``ClusterState`` (for their reservations).

Pure search: reads the state (its nodes' profiles, ``matching`` and the release bounds
``plain_bounds`` keeps for the pass) and changes nothing.
"""

from __future__ import annotations

from bisect import insort

from rota.scheduler.policy.counts import pick_counted
from rota.scheduler.policy.fit import variant_masks
from rota.scheduler.policy.node_state import INF, NodeState
from rota.scheduler.policy.snapshot import PendingJob
from rota.scheduler.policy.state import ClusterState, ConstraintKey


def earliest_start(
    state: ClusterState, job: PendingJob, key: ConstraintKey, duration: float
) -> tuple[float, list[NodeState]]:
    """Earliest start of ``job`` on schedulable nodes and the nodes it would get there."""
    now = state.now
    if job.nodes == 1 and key is None and not (job.exclusive or job.cpus or job.memory):
        return _earliest_plain(state, job, duration)
    if key is None and not (job.exclusive or job.cpus or job.memory):  # a plain gang
        return _earliest_gang(state, job, duration, state.plain_bounds(job))
    nodes = state.matching(job, key)
    bounds = sorted((_lower_bound(job, n, now), n.idx) for n in nodes)
    counted = job.constraint is not None and bool(job.constraint.counts)
    if job.nodes == 1 and not counted:
        best, best_node = INF, None
        for bound, idx in bounds:
            if bound >= best:
                break
            node = state.nodes[idx]
            t = node.earliest(_need(job, node), duration, bound, job.exclusive)
            if t < best:
                best, best_node = t, node
        return (best, [best_node]) if best_node is not None else (INF, [])
    if job.constraint is not None and job.constraint.matching:  # [a|b]: one alternative
        best_t, best_nodes = INF, []
        masks = variant_masks(job.constraint, [state.nodes[b[1]].view.features for b in bounds])
        for i in range(len(job.constraint.variants())):
            some = [b for b, mask in zip(bounds, masks, strict=True) if mask >> i & 1]
            t, chosen = _earliest_gang(state, job, duration, some)
            if t < best_t:
                best_t, best_nodes = t, chosen
        return best_t, best_nodes
    return _earliest_gang(state, job, duration, bounds)


def _earliest_gang(
    state: ClusterState, job: PendingJob, duration: float, bounds: list[tuple[float, int]]
) -> tuple[float, list[NodeState]]:
    """Earliest start of a gang: the first time at which ``job.nodes`` nodes can each
    hold their share for ``duration``, from nodes sorted by lower bound.

    Candidate times are the nodes' own earliest starts in increasing order. A node's
    start is computed only once its lower bound is no later than the candidate being
    tried (a node with a later bound cannot start by then), so a gang looks at the nodes
    that free up first, not at all of them; the answer is the one that computing every
    node's start would give.
    """
    starts: list[tuple[float, int]] = []  # computed (start, idx), sorted
    nodes, count = state.nodes, len(bounds)
    j = 0
    at = job.nodes - 1  # index in ``starts`` of the candidate tried
    while True:
        while (
            j < count
            and bounds[j][0] < INF
            and (at >= len(starts) or bounds[j][0] <= starts[at][0])
        ):
            bound, idx = bounds[j]
            j += 1
            node = nodes[idx]
            t = node.earliest(_need(job, node), duration, bound, job.exclusive)
            insort(starts, (t, idx))
        if at >= len(starts):
            return INF, []
        t = starts[at][0]
        if t == INF:
            return INF, []
        ok = [
            nodes[idx]
            for start, idx in starts
            if start <= t
            and (
                not nodes[idx].reserved
                or nodes[idx].window_ok(_need(job, nodes[idx]), t, t + duration, job.exclusive)
            )
        ]
        if job.constraint is not None and job.constraint.counts:  # [a*2&b*1]: meet them
            found = pick_counted(job.constraint, [n.view.features for n in ok], job.nodes)
            if found is not None:
                return t, [ok[i] for i in found]
        elif len(ok) >= job.nodes:
            return t, ok[: job.nodes]
        at += 1


def _earliest_plain(
    state: ClusterState, job: PendingJob, duration: float
) -> tuple[float, list[NodeState]]:
    """``earliest_start`` for a one-node job without constraints, from kept release bounds."""
    bounds = state.plain_bounds(job)
    best, best_node = INF, None
    for bound, idx in bounds:
        if bound >= best:
            break
        node = state.nodes[idx]
        t = node.earliest(job.gpus, duration, bound)
        if t < best:
            best, best_node = t, node
    return (best, [best_node]) if best_node is not None else (INF, [])


def _lower_bound(job: PendingJob, node: NodeState, now: float) -> float:
    """A time before which ``job`` cannot start on ``node``."""
    bound = node.lower_bound(_need(job, node), now)
    return max(bound, node.empty_from()) if job.exclusive else bound


def _need(job: PendingJob, node: NodeState) -> int:
    return node.total if job.exclusive else job.gpus
