"""The one interface through which the agent sees GPUs. It returns the wire model's
``Inventory`` (GPU facts only) and ``GpuTelemetry`` (processes without job ids), with host
indices (NVML's).
"""

from __future__ import annotations

from typing import Protocol

from rota.messages import GpuTelemetry, Inventory


class GpuBackend(Protocol):
    """Read GPUs. ``sample`` never raises for one bad GPU: that GPU carries ``error``."""

    def inventory(self) -> Inventory: ...

    def sample(self) -> list[GpuTelemetry]: ...

    def close(self) -> None: ...
