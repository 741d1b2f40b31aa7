"""``StateCache``: one policy's ``ClusterState`` kept from pass to pass (docs/policy.md,
"Cost of a pass")."""

from __future__ import annotations

from collections.abc import Callable

from rota.scheduler.policy.snapshot import NodeView, RunningJob
from rota.scheduler.policy.state import ClusterState


class StateCache:
    """One policy's ``ClusterState`` between passes.

    ``acquire`` returns the state for a snapshot: the kept one updated with the nodes whose
    views changed (a few of the same names in the same order) and the running jobs that
    changed, when ``end_key`` (what ``end_of`` computes, e.g. the default time limit) is
    unchanged; else a new one. ``release`` keeps the state for the next pass: undone at once,
    or, with ``run`` (what the pass carried from job to job), left as the pass ended so that
    the next pass may ``resume`` it; the next ``acquire`` undoes it. A pass that raised never
    releases: its state is dropped.
    """

    def __init__(self) -> None:
        self.state: ClusterState | None = None
        self.nodes: tuple[NodeView, ...] | None = None
        self.end_key: object = None
        self.run: object = None  # the kept pass's loop state (``backfill._Loop``)

    def acquire(
        self,
        nodes: tuple[NodeView, ...],
        running: tuple[RunningJob, ...],
        now: float,
        end_key: object,
        end_of: Callable[[RunningJob], float],
    ) -> ClusterState:
        state, self.state, self.run = self.state, None, None
        if state is not None:
            state.undo()
        if (
            state is None
            or not (end_key is self.end_key or end_key == self.end_key)
            or not self._nodes_replaced(state, nodes)
            or not state.update(running, end_of)
        ):
            state = ClusterState(nodes, running, now, end_of)
            self.end_key = end_key
        self.nodes = nodes
        state.begin(now)
        return state

    def _nodes_replaced(self, state: ClusterState, nodes: tuple[NodeView, ...]) -> bool:
        """Whether ``state`` now holds ``nodes``: the kept ones, or a few of them changed
        and replaced; False: rebuild."""
        kept = self.nodes
        if nodes is kept:
            return True
        if kept is None or len(nodes) != len(kept):
            return False
        changed = [
            (i, v)
            for i, (k, v) in enumerate(zip(kept, nodes, strict=True))
            if k is not v and k != v
        ]
        if not changed:
            return True
        if len(changed) > max(32, len(nodes) // 4) or any(
            kept[i].name != v.name for i, v in changed
        ):
            return False
        return state.replace_nodes(changed)

    def resume(self) -> ClusterState | None:
        """The state as the kept pass left it (its changes still recorded), or None."""
        state, self.state, self.run = self.state, None, None
        return state if state is not None and state.dirty else None

    def clear(self) -> None:
        """Forget the kept state (the next pass builds it from scratch)."""
        self.state = self.nodes = self.run = None

    def release(self, state: ClusterState, run: object = None) -> None:
        if run is None:
            state.undo()
        self.state, self.run = state, run
