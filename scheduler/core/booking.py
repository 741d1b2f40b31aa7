"""Who may book GPUs for whom, and how much: the one place reservations are authorised.

Admins (``reservations.admins``) book, change and delete any reservation for anyone. Other
users book for themselves (``users`` = their own name) and for their accounts (their own name
and those ``reservations.user_accounts`` lists), within the caps the admin sets; caps are off
until set. A user may change or delete only a reservation they created. The principal is the
request's user as the services see it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rota.scheduler.cluster.reservation import Reservation

HOUR = 3600.0
WEEK = 7 * 24 * HOUR


@dataclass(frozen=True, slots=True)
class BookingRules:
    """Permissions and caps (``None``: no cap). Hours are wall-clock hours of windows."""

    admins: frozenset[str] = frozenset()
    user_accounts: dict[str, frozenset[str]] | None = None
    max_gpus: int | None = None  # GPUs of one booking
    max_hours: float | None = None  # length of one window
    max_hours_per_week: float | None = None  # windows of one user within 7 days of a start
    max_days_ahead: float | None = None  # how far ahead a window may start

    def is_admin(self, principal: str) -> bool:
        return principal in self.admins

    def accounts_of(self, principal: str) -> frozenset[str]:
        return frozenset({principal}) | (self.user_accounts or {}).get(principal, frozenset())

    def may_book(
        self, principal: str, r: Reservation, now: float, others: Iterable[Reservation]
    ) -> str | None:
        """Why ``principal`` may not hold booking ``r`` (None: allowed); ``others`` are the
        open and upcoming reservations besides ``r``. The refusal names the cap or field."""
        if self.is_admin(principal):
            return None
        strangers = [u for u in r.users if u != principal]
        if strangers:
            return (
                f"users: you may book only for yourself ({principal}), not "
                f"{', '.join(strangers)} (admins book for anyone)"
            )
        mine = self.accounts_of(principal)
        foreign = [a for a in r.accounts if a not in mine]
        if foreign:
            return (
                f"accounts: you may book only for your accounts ({', '.join(sorted(mine))}), "
                f"not {', '.join(foreign)}"
            )
        return self._within_caps(principal, r, now, others)

    def may_change(self, principal: str, r: Reservation) -> str | None:
        """Why ``principal`` may not change or delete ``r`` (None: allowed)."""
        if self.is_admin(principal) or r.created_by == principal:
            return None
        return (
            f"reservation {r.name!r} was made by {r.created_by or 'someone else'}; only they "
            "and admins may change or delete it"
        )

    def _within_caps(
        self, principal: str, r: Reservation, now: float, others: Iterable[Reservation]
    ) -> str | None:
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
            span = (r.start, r.start + WEEK)
            total = sum(
                (min(e, span[1]) - max(s, span[0])) / HOUR
                for x in (r, *(o for o in others if o.created_by == principal))
                for s, e in x.windows(*span)
            )
            if total > self.max_hours_per_week:
                return (
                    f"cap max_hours_per_week: your bookings may hold at most "
                    f"{self.max_hours_per_week:g} h in a week; the 7 days from this start "
                    f"would hold {total:g} h"
                )
        return None
