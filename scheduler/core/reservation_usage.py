"""How a reservation's window was spent: booked GPU-seconds split between its own jobs, the
jobs that borrowed its GPUs and the time the no-show rule released, and the record of an
ended window (``WindowUsage``) that the service stores. Pure functions of the records."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.cluster.reservation import Reservation
from rota.scheduler.store.protocols import WindowUsage


@dataclass(frozen=True, slots=True)
class Usage:
    """Booked GPU-seconds of a reservation's current window so far, split by who used them."""

    booked: float  # GPUs x seconds from the window's start to now (its end, its release)
    owners: float  # run by jobs of the reservation
    lent: float  # run by other jobs (borrowers)
    released: float = 0.0  # from its release by the no-show rule to the window's end

    @property
    def idle(self) -> float:
        return max(0.0, self.booked - self.owners - self.lent)


def spent(r: Reservation, now: float, jobs: Iterable[JobRecord]) -> Usage:
    """How ``r``'s window was spent up to ``now`` (at most its end) by ``jobs`` (those not
    ended and those that ended since the window's start)."""
    name = r.name
    until = min(now, r.end)
    released = 0.0
    if r.policy_view().released:
        until = min(until, r.given_back)
        released = (r.end - r.given_back) * r.gpu_count()
    booked = max(0.0, until - r.start) * r.gpu_count()
    cells = r.cells()
    owners = lent = 0.0
    for job in jobs:
        if job.start_time is None:
            continue
        end = job.end_time if job.state.terminal and job.end_time else until
        seconds = max(0.0, min(end, until) - max(job.start_time, r.start))
        held = sum((a.node, g) in cells for a in job.allocation for g in a.gpus)
        if job.spec.reservation == name:
            owners += seconds * held
        else:
            lent += seconds * held
    return Usage(booked, owners, lent, released)


def window_usage(r: Reservation, usage: Usage) -> WindowUsage:
    """The stored record of ``r``'s window, spent as ``usage``."""
    whole = (r.end - r.start) * r.gpu_count()
    return WindowUsage(
        r.name, r.created_by, r.start, r.end, whole, usage.owners, usage.lent, usage.released
    )
