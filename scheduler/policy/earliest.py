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

LINEAR_TRIES = 32  # candidate times a job with counts tries one by one before galloping


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
    starts = _Starts(state, job, duration, bounds)
    counted = job.constraint is not None and bool(job.constraint.counts)
    at = job.nodes - 1  # index in ``starts`` of the candidate tried
    while not counted or at < job.nodes - 1 + LINEAR_TRIES:
        found = starts.try_at(at)
        if found is not None:
            return found
        at += 1
    return _gallop(starts, at - 1, at)


def _gallop(starts: _Starts, failed: int, at: int) -> tuple[float, list[NodeState]]:
    """The first candidate from ``at`` on where the gang fits (``failed``: the last one known
    not to), by doubling, then halving, the index tried: O(log n) tries of a job's counts
    instead of one per candidate (a pending job whose counts only the last nodes to free up
    meet tried each of them, each trying the counts on every node before it: a pass of 4,000
    nodes took a third of a second per such job). Without reserved nodes the nodes that can
    start by a time only grow with it, and with them what the counts can pick, so this is the
    first candidate that fits; with reserved nodes it may be a later one, or none (INF: the
    job gets no reserved start and starts when it fits), never one where it does not fit."""
    step = 1
    while not starts.ended(at) and starts.try_at(at) is None:
        failed, at, step = at, at + step, step * 2
    low, high = failed + 1, at  # the first candidate that does not fail is in [low, high]
    while low < high:
        middle = (low + high) // 2
        if starts.ended(middle) or starts.try_at(middle) is not None:
            high = middle
        else:
            low = middle + 1
    return starts.try_at(low) or (INF, [])


class _Starts:
    """The nodes' earliest starts for a gang, computed as far as the candidates tried need:
    once ``fill(at)`` ran, the first ``at + 1`` are final (the nodes not computed yet have
    later lower bounds, so later starts)."""

    def __init__(
        self,
        state: ClusterState,
        job: PendingJob,
        duration: float,
        bounds: list[tuple[float, int]],
    ) -> None:
        self.state, self.job, self.duration, self.bounds = state, job, duration, bounds
        self.starts: list[tuple[float, int]] = []  # computed (start, idx), sorted
        self._next = 0  # the first bound not computed

    def fill(self, at: int) -> None:
        starts, bounds, nodes, job = self.starts, self.bounds, self.state.nodes, self.job
        while (
            self._next < len(bounds)
            and bounds[self._next][0] < INF
            and (at >= len(starts) or bounds[self._next][0] <= starts[at][0])
        ):
            bound, idx = bounds[self._next]
            self._next += 1
            node = nodes[idx]
            t = node.earliest(_need(job, node), self.duration, bound, job.exclusive)
            insort(starts, (t, idx))

    def ended(self, at: int) -> bool:
        """Whether no candidate is left at ``at``: the gang cannot start (INF)."""
        self.fill(at)
        return at >= len(self.starts) or self.starts[at][0] == INF

    def try_at(self, at: int) -> tuple[float, list[NodeState]] | None:
        """(the candidate time at ``at``, the gang's nodes then), or None when the gang does
        not fit then; (INF, []) when no candidate is left."""
        if self.ended(at):
            return INF, []
        job, nodes, duration = self.job, self.state.nodes, self.duration
        t = self.starts[at][0]
        ok = [
            nodes[idx]
            for start, idx in self.starts
            if start <= t
            and (
                not nodes[idx].reserved
                or nodes[idx].window_ok(_need(job, nodes[idx]), t, t + duration, job.exclusive)
            )
        ]
        if job.constraint is not None and job.constraint.counts:
            found = pick_counted(job.constraint, [n.view.features for n in ok], job.nodes)
            return None if found is None else (t, [ok[i] for i in found])
        return (t, ok[: job.nodes]) if len(ok) >= job.nodes else None


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
