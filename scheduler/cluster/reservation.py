"""Reservations as the scheduler keeps them: GPUs of nodes booked over a window."""

from __future__ import annotations

from dataclasses import dataclass, field

from rota.scheduler.policy.snapshot import ReservationView, recurring_windows

MAINT = "MAINT"  # blocks everyone but its own jobs; may overlap other reservations
IGNORE_JOBS = "IGNORE_JOBS"  # may be created over GPUs that running jobs hold
FLEX = "FLEX"  # its jobs may start before the window, run past it and use other GPUs
DAILY = "DAILY"  # the window recurs every day
WEEKLY = "WEEKLY"  # ... every week
PURGE_COMP = "PURGE_COMP"  # deleted once its window is open and its last job has ended
FLAGS = (MAINT, IGNORE_JOBS, FLEX, DAILY, WEEKLY, PURGE_COMP)
DAY = 86_400.0
PERIODS = {DAILY: DAY, WEEKLY: 7 * DAY}
LEND = "lend"  # unused past the grace: its GPUs are lent to the queue until an owner's job comes
RELEASE = "release"  # unused past the grace: the booking (this window) is released
UNUSED_POLICIES = (LEND, RELEASE)


@dataclass(slots=True)
class Reservation:
    """A booking. ``gpus`` maps node name -> host GPU indices, resolved at creation."""

    name: str
    start: float
    end: float
    gpus: dict[str, tuple[int, ...]]
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    lend: bool = True
    created_by: str = ""
    created_at: float = 0.0
    unused: str = LEND  # what the no-show rule does with an unused window (UNUSED_POLICIES)
    given_back: float = 0.0  # when the no-show rule gave the current window back (0: not)
    view: ReservationView | None = field(default=None, compare=False)

    @property
    def maint(self) -> bool:
        return MAINT in self.flags

    @property
    def flex(self) -> bool:
        return FLEX in self.flags

    @property
    def period(self) -> float:
        """Seconds between recurring windows (0: the window does not recur)."""
        return next((PERIODS[f] for f in self.flags if f in PERIODS), 0.0)

    def gpu_count(self) -> int:
        return sum(len(idx) for idx in self.gpus.values())

    def advance(self, now: float) -> bool:
        """Move a recurring reservation whose window ended by ``now`` to its next window that
        has not ended; True when it moved."""
        period = self.period
        if not period or self.end > now:
            return False
        steps = int((now - self.end) // period) + 1
        self.start += steps * period
        self.end += steps * period
        self.given_back = 0.0
        self.view = None
        return True

    def windows(self, start: float, end: float) -> list[tuple[float, float]]:
        """This reservation's windows (the current one and, if it recurs, the later ones) that
        meet ``[start, end)``, earliest first."""
        return recurring_windows(self.start, self.end, self.period, start, end)

    def cells(self) -> set[tuple[str, int]]:
        """Every reserved (node, GPU index)."""
        return {(node, g) for node, idx in self.gpus.items() for g in idx}

    def overlaps(self, start: float, end: float) -> bool:
        """Whether ``[start, end)`` meets the window or, if it recurs, a later one."""
        return bool(self.windows(start, end))

    def policy_view(self) -> ReservationView:
        """The frozen view passes see (the same object while the reservation is unchanged)."""
        if self.view is None:
            self.view = ReservationView(
                self.name,
                self.start,
                self.end,
                dict(self.gpus),
                frozenset(self.users),
                frozenset(self.accounts),
                maint=self.maint,
                lend=self.lend,
                flex=self.flex,
                period=self.period,
                unused=self.unused,
                given_back=self.given_back,
                created_at=self.created_at,
            )
        return self.view
