"""ginfo's partition view, as ``sinfo`` prints it: one line per partition and node state,
``PARTITION AVAIL TIMELIMIT NODES STATE NODELIST``, the default partition marked ``*`` (pure:
works on ``rota.v1`` messages read as plain attributes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rota.hostlist import compress


def timelimit(seconds: float) -> str:
    """sinfo's time limit: ``D-HH:MM:SS``, ``HH:MM:SS``, or ``infinite``."""
    if not seconds:
        return "infinite"
    whole = int(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def partition_rows(
    partitions: Sequence[Any], nodes: Sequence[Any], only: str = ""
) -> list[tuple[str, ...]]:
    """The rows of the view: per partition (settings order; only ``only`` when given), one
    row per node state among its nodes; TIMELIMIT is the partition's ``max_time`` (the
    scheduler's ``max_time_limit`` when it sets none)."""
    rows: list[tuple[str, ...]] = []
    for part in partitions:
        if only and part.name != only:
            continue
        name = part.name + ("*" if part.is_default else "")
        limit = timelimit(part.max_time)
        by_state: dict[str, list[str]] = {}
        for node in nodes:
            if part.name in node.partitions:
                by_state.setdefault(str(node.state).lower(), []).append(node.name)
        if not by_state:
            rows.append((name, "up", limit, "0", "n/a", ""))
        for state, names in sorted(by_state.items()):
            rows.append((name, "up", limit, str(len(names)), state, compress(sorted(names))))
    return rows
