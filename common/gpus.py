"""Static GPU facts as the agent reads them from NVML and the scheduler stores and shows them.

Indices are host (NVML) indices; memory is in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """Static facts of one GPU."""

    index: int
    uuid: str
    name: str
    memory_total: int
    pci_bus_id: str = ""
    compute_capability: str = ""


@dataclass(frozen=True, slots=True)
class GpuLink:
    """How two GPUs connect: NVML topology level name and whether P2P reads work."""

    a: int
    b: int
    level: str
    p2p: bool
