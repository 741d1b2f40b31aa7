"""What the node listings show of reservations: GPUs reserved on each node now and next, and
the GPUs under an open MAINT window (free to no one). Pure functions over a calendar."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rota.scheduler.core.reservation_gpus import RECURRING_HORIZON
from rota.scheduler.policy.calendar import ReservationCalendar


@dataclass(frozen=True, slots=True)
class NodeBookings:
    """What ``ginfo`` shows of a node's reservations: GPUs reserved now (and by which), whether
    a MAINT window is open on it (and on which GPUs), and its next window that opens later."""

    gpus_now: int = 0
    names_now: tuple[str, ...] = ()
    maintenance: bool = False
    gpus_maint: frozenset[int] = frozenset()
    gpus_next: int = 0
    names_next: tuple[str, ...] = ()
    next_start: float = 0.0  # 0: no later window within four weeks


def maintenance_now(calendar: ReservationCalendar) -> dict[str, frozenset[int]]:
    """Node name -> its GPUs under a MAINT window open at the calendar's ``now``."""
    out: dict[str, set[int]] = {}
    for node, index in calendar.maint_cells():
        out.setdefault(node, set()).add(index)
    return {node: frozenset(idx) for node, idx in out.items()}


def on_nodes(
    calendar: ReservationCalendar, now: float, names: Iterable[str]
) -> dict[str, NodeBookings]:
    """The bookings of the nodes ``names`` that have any, at ``now`` and next (windows up to
    ``RECURRING_HORIZON`` ahead)."""
    wanted = set(names)
    now_gpus: dict[str, int] = {}
    now_names: dict[str, list[str]] = {}
    maint: dict[str, set[int]] = {}
    later: dict[str, list[tuple[float, str, int]]] = {}
    for r, start, end in calendar.windows(now + RECURRING_HORIZON):
        for node, idx in r.gpus.items():
            if node not in wanted:
                continue
            if start <= now < end:
                now_gpus[node] = now_gpus.get(node, 0) + len(idx)
                now_names.setdefault(node, []).append(r.name)
                if r.maint:
                    maint.setdefault(node, set()).update(idx)
            elif start > now:
                later.setdefault(node, []).append((start, r.name, len(idx)))
    out: dict[str, NodeBookings] = {}
    for node in set(now_gpus) | set(later):
        first = min((t for t, _, _ in later.get(node, ())), default=0.0)
        nxt = [(n, k) for t, n, k in later.get(node, ()) if t == first]
        out[node] = NodeBookings(
            gpus_now=now_gpus.get(node, 0),
            names_now=tuple(now_names.get(node, ())),
            maintenance=node in maint,
            gpus_maint=frozenset(maint.get(node, ())),
            gpus_next=sum(k for _, k in nxt),
            names_next=tuple(n for n, _ in nxt),
            next_start=first,
        )
    return out
