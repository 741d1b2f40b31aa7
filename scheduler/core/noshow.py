"""The no-show rule's step: bookings whose owners did not come are given back.

Which open windows are unused past ``unused_after`` is the pure calendar's answer
(``ReservationCalendar.no_shows``); this step only tells it which reservations their owners
used (a job naming the reservation waits, runs, or ran since the window opened) and records
the give-back (``ReservationService.give_back``). What a given-back window then does is the
calendar's and the policy's: ``unused: lend`` lends its GPUs to the whole queue until an
owner's job arrives (``policy/reserve.py``), ``unused: release`` ends the window
(``calendar.current``). Each give-back is committed with the mails ``notice`` writes to the
reservation's owners (``UnusedNotice``). The engine's tick calls ``step`` on the core thread
and records it in the audit log (``CoreSteps.tick``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rota.scheduler.cluster.reservation import Reservation
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.reservations import ReservationService
from rota.scheduler.store.protocols import BookingMail, JobRepository


class NoShowRule:
    """Gives back open windows their owners have not used for ``grace`` seconds."""

    def __init__(
        self,
        reservations: ReservationService,
        model: ClusterModel,
        jobs: JobRepository,
        grace: Callable[[], float],
        notice: Callable[[Reservation, float], Sequence[BookingMail]],
    ) -> None:
        self.reservations = reservations
        self.model = model
        self.stored_jobs = jobs  # ended jobs that ran in a window
        self.grace = grace  # seconds (the config's ``reservations.unused_after``; 0: off)
        self.notice = notice  # the mails to the owners of a reservation given back at a time
        self._used: set[tuple[str, float]] = set()  # (name, window start) seen used

    def step(self, now: float) -> list[Reservation]:
        """Give back every window that is a no-show at ``now``; the reservations given back."""
        calendar = self.reservations.calendar(now)
        self._used &= {(r.name, r.start) for r in calendar.open}  # forget ended windows
        due = calendar.no_shows(self.grace(), ())
        due = tuple(r for r in due if (r.name, r.start) not in self._used)
        if not due:
            return []
        used = self._used_now({r.name: r.start for r in due})
        self._used |= {(r.name, r.start) for r in due if r.name in used}  # once used, used
        return [self._give_back(r.name, now) for r in due if r.name not in used]

    def _give_back(self, name: str, now: float) -> Reservation:
        mails = self.notice(self.reservations.get(name), now)
        return self.reservations.give_back(name, now, mails)

    def _used_now(self, starts: dict[str, float]) -> set[str]:
        """The reservations of ``starts`` (name -> window start) a job of theirs waits for,
        runs in, or ran in since the window opened."""
        used = {
            j.spec.reservation
            for j in self.model.jobs.values()
            if j.spec.reservation in starts and not j.state.terminal
        }
        for job in self.stored_jobs.ended(min(starts.values())):
            name = job.spec.reservation
            if name in starts and (job.end_time or 0.0) > starts[name]:
                used.add(name)
        return used
