"""When an agent that lost the scheduler stops its jobs (self-fencing).

The scheduler may run a silent node's jobs elsewhere once its ``node_grace`` ends; the agent
stops them before that, so that no attempt runs twice.
"""

from __future__ import annotations

from collections.abc import Callable


class SelfFence:
    """Tracks contact with the scheduler on the ``monotonic`` clock (seconds).

    ``welcomed`` on every welcome, ``lost`` when a welcomed stream ends; ``due`` says, once per
    loss, when it is time to stop this node's jobs.
    """

    def __init__(self, kill_grace: float, monotonic: Callable[[], float]) -> None:
        self._kill_grace = kill_grace
        self._monotonic = monotonic
        self.node_grace = 0.0  # from the scheduler's welcome; 0 = never self-fence
        self._lost_since: float | None = None
        self._fenced = False

    def welcomed(self, node_grace: float) -> None:
        self.node_grace = node_grace
        self._lost_since, self._fenced = None, False

    def lost(self) -> None:
        self._lost_since = self._monotonic()

    def fence_after(self) -> float:
        """Seconds without the scheduler after which this agent stops its jobs: before the
        scheduler's ``node_grace`` ends (when it may run them elsewhere), leaving room for the
        stream's keepalive to notice the break and for the stop's grace period."""
        margin = 30.0 + self._kill_grace
        return max(self.node_grace - margin, self.node_grace / 2)

    def due(self) -> float | None:
        """Seconds away from the scheduler when the jobs must be stopped now, else None.

        Answers a number at most once per loss of contact.
        """
        lost = self._lost_since
        if self._fenced or lost is None or not self.node_grace:
            return None
        away = self._monotonic() - lost
        if away < self.fence_after():
            return None
        self._fenced = True
        return away
