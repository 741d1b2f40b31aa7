"""One output request's flow (``glogs``): the bytes the agent sent and the scheduler has not
acknowledged stay within the request's window, so a reader that stops reading holds the
output here, on the node's disk, instead of in the scheduler's memory. Each chunk counts at
least ``MESSAGE_COST`` (the scheduler acknowledges each chunk its reader took), so output
written a few bytes at a time is not thousands of messages in flight."""

from __future__ import annotations

import threading

from rota.messages import window_cost


class LogFlow:
    """A request's window (``window`` bytes unacknowledged at most; 0: no limit) and its stop
    (a cancel, or the scheduler's stream gone): ``send`` waits for room, ``acked`` makes
    some, ``stop`` ends every wait."""

    def __init__(self, window: int = 0) -> None:
        self.window = window
        self._cond = threading.Condition()
        self._unacked = 0
        self._stopped = False

    @property
    def stopped(self) -> bool:
        return self._stopped

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def pause(self, seconds: float) -> bool:
        """Wait ``seconds`` or until stopped; True when stopped."""
        with self._cond:
            self._cond.wait_for(lambda: self._stopped, seconds)
            return self._stopped

    def send(self, size: int) -> bool:
        """Wait until a chunk of ``size`` bytes fits the window and count it in (at least
        ``MESSAGE_COST``); False when the request was stopped instead."""
        size = window_cost(size)
        with self._cond:
            self._cond.wait_for(
                lambda: (
                    self._stopped
                    or not self.window
                    or self._unacked == 0
                    or self._unacked + size <= self.window
                )
            )
            if self._stopped:
                return False
            self._unacked += size
            return True

    def acked(self, size: int) -> None:
        """The scheduler acknowledged one chunk of ``size`` bytes."""
        with self._cond:
            self._unacked = max(0, self._unacked - window_cost(size))
            self._cond.notify_all()
