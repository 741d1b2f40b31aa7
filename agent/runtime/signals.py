"""Warning signals: the job's ``signal`` before its time limit and before a preemption stop.

A job that sets ``signal: USR1@120`` gets SIGUSR1 120 seconds before its time limit; a
preempted job gets its signal (SIGTERM when it set none) ``warn_seconds`` before the stop
(the scheduler's ``preemption_grace``), then the usual SIGTERM, grace, SIGKILL.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from docker.errors import DockerException, NotFound

from rota.agent.runtime.attempts import Attempt, Phase
from rota.agent.runtime.engine_args import ENGINE_DOWN
from rota.jobsignal import parse_signal
from rota.messages import KillOrder

log = logging.getLogger(__name__)


def warning_time(deadline: float, signal: str) -> tuple[str, float] | None:
    """(signal name, Unix seconds) of the warning before ``deadline`` (0: none) for a job's
    ``signal`` ("NAME@SECONDS", "" for none); None when there is nothing to send."""
    if not deadline or not signal:
        return None
    name, seconds = parse_signal(signal)
    return name, deadline - seconds


class Warner:
    """Sends warning signals to attempts' containers through a Docker client."""

    def __init__(
        self, client: Any, clock: Callable[[], float], sleep: Callable[[float], None]
    ) -> None:
        self._client = client
        self._clock = clock
        self._sleep = sleep

    def send(self, att: Attempt, name: str) -> None:
        """SIG``name`` to the attempt's container (nothing when it is gone)."""
        try:
            self._client.containers.get(att.container_id).kill(signal=f"SIG{name}")
            log.info(
                "sent SIG%s to job %s attempt %d",
                name,
                att.display_id or att.job_id,
                att.attempt,
                extra={"job": att.job_id, "attempt": att.attempt},
            )
        except (NotFound, DockerException, *ENGINE_DOWN):
            pass  # ended meanwhile, or the engine is down: the stop follows anyway

    def send_due(self, att: Attempt, warn: tuple[str, float] | None) -> tuple[str, float] | None:
        """Send ``warn`` (from ``warning_time``) when its time has come: None once sent."""
        if warn is None or self._clock() < warn[1]:
            return warn
        self.send(att, warn[0])
        return None

    def then_stop(
        self, att: Attempt, order: KillOrder, stop: Callable[[Attempt, float], None]
    ) -> None:
        """Warn with ``order.warn_signal``, wait ``order.warn_seconds`` (less if the attempt
        ends first), then ``stop`` it with ``order.grace``; without a warning, stop at once."""
        if not order.warn_signal or order.warn_seconds <= 0:
            stop(att, order.grace)
            return
        self.send(att, order.warn_signal)
        until = self._clock() + order.warn_seconds
        while self._clock() < until and att.phase is Phase.RUNNING:
            self._sleep(min(0.2, max(0.0, until - self._clock())))
        stop(att, order.grace)
