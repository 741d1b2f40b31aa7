"""One output request's flow (``glogs``): the bytes the agent sent and the scheduler has not
acknowledged stay within the request's window, so a reader that stops reading holds the
output here, on the node's disk, instead of in the scheduler's memory."""

from __future__ import annotations

import threading


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
        """Wait until ``size`` more bytes fit the window and count them in; False when the
        request was stopped instead."""
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
        with self._cond:
            self._unacked = max(0, self._unacked - size)
            self._cond.notify_all()
