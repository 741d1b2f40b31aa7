"""How much a user may book: the caps an admin sets on reservations (off until set).

Who may book for whom is authorisation (``core.authz.may_book``); these caps bind users who
are not admins, and a refusal names the cap.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rota.scheduler.cluster.reservation import Reservation

HOUR = 3600.0
WEEK = 7 * 24 * HOUR


@dataclass(frozen=True, slots=True)
class BookingRules:
    """Caps on one user's bookings (``None``: no cap). Hours are wall-clock hours of windows."""

    max_gpus: int | None = None  # GPUs of one booking
    max_hours: float | None = None  # length of one window
    max_hours_per_week: float | None = None  # windows of one user within 7 days of a start
    max_days_ahead: float | None = None  # how far ahead a window may start
    users_may_repeat: bool = True  # DAILY and WEEKLY for users too (else admins only: authz)

    def over_cap(self, user: str, r: Reservation, now: float, others: Iterable[Reservation]) -> str:
        """ "" when booking ``r`` keeps ``user`` within every cap, else the cap it breaks and by
        how much; ``others`` are the open and upcoming reservations besides ``r``."""
        gpus = r.gpu_count()
        if self.max_gpus is not None and gpus > self.max_gpus:
            return f"cap max_gpus: a booking may hold at most {self.max_gpus} GPUs; asked {gpus}"
        hours = (r.end - r.start) / HOUR
        if self.max_hours is not None and hours > self.max_hours:
            return (
                f"cap max_hours: a booking may last at most {self.max_hours:g} h; asked {hours:g} h"
            )
        ahead = (r.start - now) / (24 * HOUR)
        if self.max_days_ahead is not None and ahead > self.max_days_ahead:
            return (
                f"cap max_days_ahead: a booking may start at most {self.max_days_ahead:g} days "
                f"ahead; this one starts in {ahead:.1f} days"
            )
        if self.max_hours_per_week is not None:
            mine = [r, *(o for o in others if o.created_by == user)]
            # a recurring booking's windows go on: also the weeks from the user's later starts
            starts = sorted({r.start, *(o.start for o in mine if r.period and o.start > r.start)})
            for first in starts:
                total = _hours_in_week(mine, first)
                if total > self.max_hours_per_week:
                    return (
                        f"cap max_hours_per_week: your bookings may hold at most "
                        f"{self.max_hours_per_week:g} h in a week; the 7 days from "
                        f"{'this start' if first == r.start else 'a later booking of yours'} "
                        f"would hold {total:g} h"
                    )
        return ""


def _hours_in_week(bookings: Iterable[Reservation], first: float) -> float:
    """Hours of ``bookings``' windows (repeats included) within the 7 days from ``first``."""
    end = first + WEEK
    return sum(
        (min(e, end) - max(s, first)) / HOUR for x in bookings for s, e in x.windows(first, end)
    )
