"""``ginfo -G`` / ``ginfo -N NODE``: one line per GPU, and for one node its inventory.

Telemetry values older than the stale window carry ``*`` (never shown as fresh). Works on
``rota.v1`` Node messages; imports nothing from the daemons.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PROBLEMS = ("unhealthy", "dirty", "busy")
STALE_NOTE = "* stale: no heartbeat recently; the last values seen are shown"


def gpu_rows(nodes: Sequence[Any]) -> list[tuple[object, ...]]:
    """NODE GPU NAME STATE JOB UTIL MEMORY TEMP REASON for every GPU of ``nodes``."""
    from rota.units import format_size

    rows: list[tuple[object, ...]] = []
    for n in nodes:
        for g in n.gpus:
            t = g.telemetry
            seen = g.HasField("telemetry") and not t.error  # a failing GPU has no values
            mark = "*" if g.stale else ""
            memory = f"{format_size(t.memory_used)}/" if seen else "-/"
            rows.append(
                (
                    n.name,
                    g.info.index,
                    g.info.name + (" (simulated)" if n.inventory.simulated else ""),
                    g.state,
                    g.job_id or "-",
                    f"{t.utilization:.0f}%{mark}" if seen else "-",
                    f"{memory}{format_size(g.info.memory_total)}{mark if seen else ''}",
                    f"{t.temperature:.0f}C{mark}" if seen else "-",
                    _reason(g),
                )
            )
    return rows


def _reason(g: Any) -> str:
    if g.state == "unhealthy" and g.marked_by:
        import time

        since = time.strftime("%Y-%m-%d %H:%M", time.localtime(g.marked_time))
        return f"{g.reason} (by {g.marked_by} since {since})"
    return str(g.reason)


def gpu_note(n: Any) -> str:
    """``GPU 1 unhealthy, GPU 0 busy``: the GPUs of a node that take no jobs, for its row."""
    out = [f"GPU {g.info.index} {g.state}" for g in n.gpus if g.state in PROBLEMS]
    return ", ".join(out) + ("; see ginfo -N " + n.name if out else "")


def gpu_table(nodes: Sequence[Any]) -> str:
    from rota.cli.render import table

    headers = ["NODE", "GPU", "NAME", "STATE", "JOB", "UTIL", "MEMORY", "TEMP", "REASON"]
    out = table(headers, gpu_rows(nodes), right=["GPU", "UTIL", "TEMP"])
    if any(g.stale for n in nodes for g in n.gpus):
        out += "\n" + STALE_NOTE
    return out


def node_detail(n: Any) -> str:
    """Driver and CUDA versions, GPU mode, every GPU's identity and processes, topology."""
    from rota.cli.render import table
    from rota.units import format_size

    inv = n.inventory
    lines = [
        f"Node {n.name}: driver {inv.driver_version or '-'}, CUDA {inv.cuda_version or '-'}, "
        f"GPU mode {inv.gpu_mode or '-'}" + (" (simulated GPUs)" if inv.simulated else "")
    ]
    if inv.note:
        lines.append(f"Note: {inv.note}")
    if n.gpus_reserved or n.reserved_next_start:
        from rota.cli.ginfo import reserved

        lines.append(f"Reserved: {reserved(n)}" + (" (maintenance)" if n.maintenance else ""))
    if not n.gpus:
        return "\n".join(lines)
    ident = [
        (g.info.index, g.info.uuid or "-", g.info.pci_bus_id or "-", g.info.compute_capability)
        for g in n.gpus
    ]
    lines += ["", table(["GPU", "UUID", "PCI_BUS_ID", "CC"], ident, right=["GPU"])]
    procs = [
        (g.info.index, p.pid, format_size(p.memory_used), p.job_id or "(not a rota job)")
        for g in n.gpus
        for p in g.telemetry.processes
    ]
    if procs:
        lines += ["", table(["GPU", "PID", "MEMORY", "JOB"], procs, right=["GPU", "PID"])]
    if inv.links:
        lines += ["", "Topology (nvidia-smi topo -m levels; p2p: peer reads work):"]
        lines.append(topology_matrix([g.info.index for g in n.gpus], inv.links))
    return "\n".join(lines)


def topology_matrix(indices: Sequence[int], links: Sequence[Any]) -> str:
    """An ``nvidia-smi topo -m``-like matrix; a trailing ``+`` marks working P2P reads."""
    from rota.cli.render import table

    level: dict[tuple[int, int], str] = {}
    for link in links:
        text = link.level + ("+" if link.p2p else "")
        level[(link.a, link.b)] = level[(link.b, link.a)] = text
    headers = ["", *(f"GPU{i}" for i in indices)]
    rows = [
        (f"GPU{a}", *("X" if a == b else level.get((a, b), "?") for b in indices)) for a in indices
    ]
    return table(headers, rows)
