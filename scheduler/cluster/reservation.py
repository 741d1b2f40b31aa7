"""Reservations as the scheduler keeps them: GPUs of nodes booked over a window."""

from __future__ import annotations

from dataclasses import dataclass, field

from rota.scheduler.policy.snapshot import ReservationView

MAINT = "MAINT"  # blocks everyone but its own jobs; may overlap other reservations
IGNORE_JOBS = "IGNORE_JOBS"  # may be created over GPUs that running jobs hold
FLEX = "FLEX"
DAILY = "DAILY"
WEEKLY = "WEEKLY"
PURGE_COMP = "PURGE_COMP"
FLAGS = (MAINT, IGNORE_JOBS, FLEX, DAILY, WEEKLY, PURGE_COMP)


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
    view: ReservationView | None = field(default=None, compare=False)

    @property
    def maint(self) -> bool:
        return MAINT in self.flags

    def cells(self) -> set[tuple[str, int]]:
        """Every reserved (node, GPU index)."""
        return {(node, g) for node, idx in self.gpus.items() for g in idx}

    def overlaps(self, start: float, end: float) -> bool:
        """Whether ``[start, end)`` meets the window."""
        return start < self.end and self.start < end

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
            )
        return self.view
