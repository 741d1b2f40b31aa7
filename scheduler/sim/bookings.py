"""Reservations for the simulator: a CSV booking pattern (``rota simulate --reservations FILE``).

Columns ``name,start,end,nodes,users,accounts`` and optionally ``gpus``, ``flags``, ``lend``:

- ``start``, ``end``: seconds after the trace's first submission (the simulated clock's 0);
- ``nodes``: simulator node numbers (``node0000`` is 0), space-separated, ranges allowed
  (``0-3 8``);
- ``gpus``: GPUs booked per node, the first ones of each (empty: every GPU of the node);
- ``users``, ``accounts``: space-separated; trace jobs that name the reservation (the generic
  trace's ``reservation`` column) and whose user or account it lists run in it;
- ``flags``: space-separated, of ``MAINT FLEX DAILY WEEKLY`` (as for ``greserve``);
- ``lend``: ``no`` keeps preemptible jobs of others off its idle GPUs (default: lent).

Overlapping bookings of the same GPUs are refused, as the scheduler refuses them (MAINT ones
may overlap). Errors name the file, the line and the column.
"""

from __future__ import annotations

import csv
from pathlib import Path

from rota.scheduler.cluster.reservation import DAILY, FLEX, MAINT, PERIODS, WEEKLY, Reservation
from rota.scheduler.sim.trace import TraceError

REQUIRED = ("name", "start", "end", "nodes", "users", "accounts")
SIM_FLAGS = (MAINT, FLEX, DAILY, WEEKLY)
HORIZON = 28 * 86_400.0  # recurring bookings are checked for overlaps this far ahead


def node_name(number: int) -> str:
    """The simulator's name of node ``number``."""
    return f"node{number:04d}"


def read_bookings(path: str | Path, nodes: int, gpus_per_node: int) -> list[Reservation]:
    """The bookings of ``path`` for a cluster of ``nodes`` x ``gpus_per_node``, checked;
    TraceError names the file, line and problem."""
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or ())]
        if missing:
            raise TraceError(f"{path}: missing column(s) {', '.join(missing)}")
        out: list[Reservation] = []
        for line, row in enumerate(reader, start=2):
            try:
                r = _booking(row, nodes, gpus_per_node)
                _check_free(r, out)
            except ValueError as exc:
                raise TraceError(f"{path}:{line}: {exc}") from None
            out.append(r)
    return out


def _booking(row: dict[str, str], nodes: int, gpus_per_node: int) -> Reservation:
    name = (row.get("name") or "").strip()
    if not name:
        raise ValueError("name: empty")
    try:
        start, end = float(row["start"]), float(row["end"])
    except ValueError:
        raise ValueError("start/end: seconds after the first submission") from None
    if end <= start or start < 0:
        raise ValueError("start/end: need 0 <= start < end")
    flags = tuple(f.upper() for f in (row.get("flags") or "").split())
    unknown = [f for f in flags if f not in SIM_FLAGS]
    if unknown:
        raise ValueError(f"flags: unknown {unknown[0]!r}; known: {' '.join(SIM_FLAGS)}")
    period = next((PERIODS[f] for f in flags if f in PERIODS), 0.0)
    if period and end - start > period:
        raise ValueError(f"end: a recurring window may last at most {period / 3600:g} h")
    width = (row.get("gpus") or "").strip()
    count = int(width) if width else gpus_per_node
    if not 1 <= count <= gpus_per_node:
        raise ValueError(f"gpus: 1 to {gpus_per_node} per node")
    users = tuple((row.get("users") or "").split())
    accounts = tuple((row.get("accounts") or "").split())
    if not users and not accounts:
        raise ValueError("users/accounts: name who may use it")
    lend = (row.get("lend") or "yes").strip().lower() not in ("no", "false", "0")
    gpus = {node_name(n): tuple(range(count)) for n in _numbers(row["nodes"], nodes)}
    return Reservation(name, start, end, gpus, users, accounts, flags, lend)


def _numbers(text: str, nodes: int) -> list[int]:
    """Node numbers of ``0-3 8``, each below ``nodes``."""
    out: list[int] = []
    for part in text.split():
        first, _, last = part.partition("-")
        try:
            span = range(int(first), int(last or first) + 1)
        except ValueError:
            raise ValueError(f"nodes: {part!r} is not a node number or range") from None
        if not span or span[-1] >= nodes:
            raise ValueError(f"nodes: {part!r} is outside 0-{nodes - 1}")
        out.extend(n for n in span if n not in out)
    if not out:
        raise ValueError("nodes: empty")
    return out


def _check_free(r: Reservation, before: list[Reservation]) -> None:
    if any(other.name == r.name for other in before):
        raise ValueError(f"name: {r.name!r} is booked twice")
    if MAINT in r.flags:
        return
    cells = r.cells()
    for other in before:
        if MAINT in other.flags or not cells & other.cells():
            continue
        for start, end in r.windows(r.start, r.start + HORIZON):
            if other.overlaps(start, end):
                raise ValueError(f"start/end: its GPUs are booked by {other.name} then")
