"""Simulated GPUs for laptops and demos (``--simulate-gpus N``); always marked simulated."""

from __future__ import annotations

from rota.gpus import GpuInfo
from rota.messages import GpuTelemetry, Inventory

SIMULATED_MEMORY = 80 * 2**30


class SimulatedBackend:
    """N identical idle GPUs named ``Simulated GPU``, with stable fake UUIDs per node."""

    def __init__(self, count: int, node_name: str = "node") -> None:
        self._gpus = tuple(
            GpuInfo(
                index=i,
                uuid=f"GPU-sim-{node_name}-{i}",
                name="Simulated GPU",
                memory_total=SIMULATED_MEMORY,
            )
            for i in range(count)
        )

    def inventory(self) -> Inventory:
        return Inventory(gpus=self._gpus, simulated=True)

    def sample(self) -> list[GpuTelemetry]:
        return [GpuTelemetry(index=g.index, uuid=g.uuid) for g in self._gpus]

    def close(self) -> None:
        return None
