"""The reservation calendar: which GPUs are held for whom, when, as of one instant.

``ReservationCalendar(views, now)`` is pure: built from the reservations as stored (frozen
``ReservationView``s) and ``now``, it moves a recurring reservation whose window has ended on to
its current or next window and leaves out the ended ones, without changing anything. The
policy's ``ReservationGate``, the scheduler's reservation service (``core/reservations.py``) and
the simulator all ask it; only the service's ``advance(now)`` writes what it computes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType

from rota.scheduler.policy import reasons
from rota.scheduler.policy.snapshot import PendingJob, ReservationView

Cell = tuple[str, int]  # (node name, GPU index)


def current(view: ReservationView, now: float) -> ReservationView | None:
    """``view`` as of ``now``: itself while its window has not ended, a recurring one moved on
    to its next window that has not ended, None for one that has ended for good. A window the
    no-show rule released counts as ended."""
    released = view.released and view.end > now
    if view.end > now and not released:
        return view
    if not view.period:
        return None
    steps = 1 if released else int((now - view.end) // view.period) + 1
    shift = steps * view.period
    return dataclasses.replace(view, start=view.start + shift, end=view.end + shift)


class ReservationCalendar:
    """The open and upcoming reservations at ``now`` (immutable once built)."""

    __slots__ = ("_by_name", "now", "open", "reservations", "upcoming")

    def __init__(self, views: Iterable[ReservationView], now: float) -> None:
        self.now = now
        kept = [c for c in (current(v, now) for v in views) if c is not None]
        kept.sort(key=lambda r: (r.start, r.name))
        self.reservations: tuple[ReservationView, ...] = tuple(kept)
        self._by_name: Mapping[str, ReservationView] = MappingProxyType({r.name: r for r in kept})
        self.open = tuple(sorted((r for r in kept if r.active(now)), key=lambda r: r.name))
        self.upcoming = tuple(r for r in kept if r.start > now)

    def get(self, name: str) -> ReservationView | None:
        """The reservation named ``name`` if it is open or upcoming."""
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def deadline(self, name: str) -> float:
        """When a job of reservation ``name`` started now must end: its open window's end
        (0: not open, or FLEX, whose jobs may run past it)."""
        r = self._by_name.get(name)
        return r.end if r is not None and not r.flex and r.active(self.now) else 0.0

    def maint_cells(self) -> frozenset[Cell]:
        """GPUs of open MAINT windows: nobody but their own jobs runs there."""
        return frozenset(c for r in self.open if r.maint for c in r.cells())

    def booked_cells(self) -> frozenset[Cell]:
        """Every GPU of an open or upcoming window."""
        return frozenset(c for r in self.reservations for c in r.cells())

    def free_until(self) -> dict[Cell, float]:
        """GPUs of upcoming windows that no window holds now -> when the first one opens."""
        held_now = {c for r in self.open for c in r.cells()}
        out: dict[Cell, float] = {}
        for r in self.upcoming:  # earliest first
            for cell in r.cells():
                if cell not in held_now:
                    out.setdefault(cell, r.start)
        return out

    def held(self, start: float, end: float) -> dict[Cell, tuple[str, ...]]:
        """GPUs some window (recurring ones included) holds during ``[start, end)`` -> the
        names of the reservations holding them, by name."""
        out: dict[Cell, list[str]] = {}
        for r in sorted(self.reservations, key=lambda r: r.name):
            if r.windows(start, end):
                for cell in r.cells():
                    out.setdefault(cell, []).append(r.name)
        return {cell: tuple(names) for cell, names in out.items()}

    def per_node(self, at: float) -> dict[str, int]:
        """GPUs reserved at instant ``at`` per node name."""
        out: dict[str, int] = {}
        for r in self.reservations:
            if any(start <= at < end for start, end in r.windows(at, at + 1.0)):
                for node, idx in r.gpus.items():
                    out[node] = out.get(node, 0) + len(idx)
        return out

    def windows(self, until: float) -> list[tuple[ReservationView, float, float]]:
        """Every window (reservation, start, end) meeting ``[now, until)``, by reservation
        name then start."""
        return [
            (r, start, end)
            for r in sorted(self.reservations, key=lambda r: r.name)
            for start, end in r.windows(self.now, until)
        ]

    def no_shows(self, grace: float, used: Iterable[str]) -> tuple[ReservationView, ...]:
        """The no-show rule: the open windows, MAINT ones aside, that began (or were booked,
        if later) at least ``grace`` seconds ago, whose owners have not used them (their names are not in ``used``: no
        job of theirs ran in the window or waits for it) and that were not given back yet.
        Their GPUs go back per ``unused``: lent to the queue until an owner's job comes,
        or released. ``grace`` 0 turns the rule off."""
        if grace <= 0:
            return ()
        seen = set(used)
        return tuple(
            r
            for r in self.open
            if not r.maint
            and max(r.start, r.created_at) + grace <= self.now
            and r.name not in seen
            and r.given_back < r.start
        )

    def edges(self) -> list[float]:
        """Every future start and end of the current windows, earliest first (when a pass
        must look again)."""
        return sorted({t for r in self.reservations for t in (r.start, r.end) if t > self.now})

    def blocking(self, job: PendingJob, reason: str | None) -> str:
        """The reservation a job waiting with ``reason`` is held by, in words ("" when
        none): ``gqueue --explain``."""
        if job.reservation:
            r = self.get(job.reservation)
            if r is None:
                return f"{job.reservation} (deleted or ended)"
            if reason == reasons.RESERVATION and not r.allows(job.user, job.account):
                return f"{r.name} (does not allow user {job.user} or account {job.account})"
            return f"{r.name} ({_when(r.start)} to {_when(r.end)})"
        if reason != reasons.REQ_NODE_NOT_AVAIL:
            return ""
        return ", ".join(
            f"{r.name} (until {_when(r.end)})"
            if r.active(self.now)
            else f"{r.name} (from {_when(r.start)})"
            for r in self.reservations
        )


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")
