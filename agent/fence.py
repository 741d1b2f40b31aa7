"""When an agent that lost the scheduler stops its jobs (self-fencing).

The scheduler may run a silent node's jobs elsewhere ``node_grace`` after the last message it
received from the node; the agent has them dead before that, so that no attempt runs twice.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from enum import Enum

from rota.messages import FENCE_KILL_MARGIN


class Step(Enum):
    """What a cut-off agent does to its containers, in this order."""

    TERM = "term"  # the usual stop: SIGTERM, then SIGKILL after ``SelfFence.kill_grace``
    KILL = "kill"  # SIGKILL to whatever still runs, whatever the stop's progress


class SelfFence:
    """Tracks confirmed contact with the scheduler on the ``monotonic`` clock (seconds).

    Contact is when this agent *sent* a message that the scheduler answered (``hello_sent``,
    then ``welcomed``; ``asked`` for each heartbeat or keepalive, ``answered`` for each pong, in
    order): the scheduler received it no earlier, so it may run this node's jobs elsewhere no
    sooner than ``node_grace`` after it. SIGKILL is due ``FENCE_KILL_MARGIN`` before that, the
    SIGTERM ``kill_grace`` earlier still, and neither before ``node_timeout`` of silence (when
    the scheduler itself takes the node for lost): ``kill_grace`` is shortened to fit.
    ``due`` says each step once per contact.
    """

    def __init__(self, kill_grace: float, monotonic: Callable[[], float]) -> None:
        self.configured_kill_grace = kill_grace
        self._monotonic = monotonic
        self.node_grace = 0.0  # from the scheduler's welcome; 0 = never self-fence
        self.node_timeout = 0.0  # from the welcome; 0 = not said (older schedulers)
        self.contact: float | None = None  # None: never welcomed
        self._hello: float | None = None
        self._asked: deque[float] = deque()  # send times of messages a pong will answer
        self._done: dict[Step, float] = {}  # step -> the contact it was taken for

    def hello_sent(self) -> None:
        """A hello is about to go out on a new stream (its welcome confirms it)."""
        self._hello = self._monotonic()
        self._asked.clear()

    def welcomed(self, node_grace: float, node_timeout: float = 0.0) -> None:
        self.node_grace, self.node_timeout = node_grace, node_timeout
        self.contact = self._hello if self._hello is not None else self._monotonic()
        self._asked.clear()

    def restore(self, node_grace: float, node_timeout: float, contact: float) -> None:
        """Timings kept by an earlier run of this agent (``FenceRecord``), until welcomed."""
        self.node_grace, self.node_timeout, self.contact = node_grace, node_timeout, contact

    def asked(self) -> None:
        """A heartbeat or keepalive is about to be sent (the scheduler answers it)."""
        self._asked.append(self._monotonic())

    def answered(self) -> None:
        """A pong came: the oldest unanswered message reached the scheduler."""
        if self._asked:
            sent = self._asked.popleft()
            self.contact = sent if self.contact is None else max(self.contact, sent)

    def _silence_floor(self) -> float:
        """The least silence after which the agent may stop its jobs."""
        return self.node_timeout or self.node_grace / 2

    @property
    def kill_grace(self) -> float:
        """SIGTERM to SIGKILL when fencing: the configured one, shortened so that SIGTERM
        comes no sooner than ``node_timeout`` of silence."""
        if not self.node_grace:
            return self.configured_kill_grace
        room = self.node_grace - FENCE_KILL_MARGIN - self._silence_floor()
        return max(0.0, min(self.configured_kill_grace, room))

    def times(self) -> dict[Step, float] | None:
        """When (monotonic) each step is due for the current contact; None: never."""
        if self.contact is None or not self.node_grace:
            return None
        kill = self.contact + max(self.node_grace - FENCE_KILL_MARGIN, self._silence_floor())
        return {Step.TERM: kill - self.kill_grace, Step.KILL: kill}

    def due(self) -> Step | None:
        """The step to take now (marked taken), else None."""
        times = self.times()
        if times is None or self.contact is None:
            return None
        now = self._monotonic()
        for step, at in times.items():
            if now >= at and self._done.get(step) != self.contact:
                self._done[step] = self.contact
                return step
        return None

    def wait(self, longest: float = 1.0) -> float:
        """Seconds to wait before asking ``due`` again (at most ``longest``)."""
        times = self.times()
        if times is None:
            return longest
        now = self._monotonic()
        ahead = [at - now for step, at in times.items() if self._done.get(step) != self.contact]
        return min([longest, *(max(a, 0.01) for a in ahead)])

    def silence(self) -> float:
        """Seconds since the last confirmed contact (0 when never welcomed)."""
        return 0.0 if self.contact is None else self._monotonic() - self.contact
