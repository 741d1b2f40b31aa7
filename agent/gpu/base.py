"""The one interface through which the agent sees GPUs, and the values it returns.

Indices are host indices (NVML's). Memory is in bytes, power in watts, temperature in Celsius,
utilisation in percent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from rota.gpus import GpuInfo, GpuLink


@dataclass(frozen=True, slots=True)
class Inventory:
    """What a node has. ``simulated`` marks GPUs that are not real (``--simulate-gpus``)."""

    gpus: tuple[GpuInfo, ...]
    links: tuple[GpuLink, ...] = ()
    driver_version: str = ""
    cuda_version: str = ""
    simulated: bool = False
    note: str = ""  # why there are no GPUs, when NVML could not be used


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A compute process NVML lists on a GPU (host pid)."""

    pid: int
    memory_used: int


@dataclass(frozen=True, slots=True)
class GpuSample:
    """Live telemetry of one GPU. ``error`` is set when NVML reports the GPU lost or failing."""

    index: int
    uuid: str = ""
    utilization: float = 0.0
    memory_used: int = 0
    temperature: float = 0.0
    power: float = 0.0
    error: str = ""
    processes: tuple[GpuProcess, ...] = field(default_factory=tuple)


class GpuBackend(Protocol):
    """Read GPUs. ``sample`` never raises for one bad GPU: that GPU carries ``error``."""

    def inventory(self) -> Inventory: ...

    def sample(self) -> list[GpuSample]: ...

    def close(self) -> None: ...
