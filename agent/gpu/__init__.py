"""The agent's view of its GPUs: NVML on real nodes, simulated GPUs on request, none otherwise.

``open_backend`` picks the backend once at start-up. A node where NVML cannot be loaded or
initialised still runs, with 0 GPUs, and says why in one WARNING line and in ``Inventory.note``.
"""

from __future__ import annotations

import ctypes
import logging

import pynvml

from rota.agent.gpu.base import GpuBackend
from rota.agent.gpu.nvml import NvmlBackend
from rota.agent.gpu.simulated import SimulatedBackend
from rota.messages import GpuTelemetry, Inventory

log = logging.getLogger("rota.agent")


class NoGpuBackend:
    """A node without usable GPUs; ``note`` says why."""

    def __init__(self, note: str) -> None:
        self._inventory = Inventory(gpus=(), note=note)

    def inventory(self) -> Inventory:
        return self._inventory

    def sample(self) -> list[GpuTelemetry]:
        return []

    def close(self) -> None:
        return None


def _why(exc: BaseException) -> str:
    """The reason NVML failed, with the loader's own message when the library is missing."""
    if isinstance(exc, pynvml.NVMLError_LibraryNotFound):
        try:  # pynvml drops the dlopen error; ask the loader again for it
            ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as err:
            return f"{exc}: {err}"
    return str(exc) or type(exc).__name__


def open_backend(simulate_gpus: int | None, node_name: str) -> tuple[GpuBackend, Inventory]:
    """``SimulatedBackend(simulate_gpus)`` when asked for, else NVML, else a 0-GPU backend.

    Never raises for a missing or broken NVML: that is logged once at WARNING.
    """
    if simulate_gpus is not None:
        sim = SimulatedBackend(simulate_gpus, node_name)
        return sim, sim.inventory()
    try:
        backend = NvmlBackend()
    except (pynvml.NVMLError, OSError) as exc:
        why = _why(exc)
    else:
        return backend, backend.inventory()
    note = f"NVML could not be loaded ({why}); node {node_name} runs with 0 GPUs"
    log.warning("%s", note)
    empty = NoGpuBackend(note)
    return empty, empty.inventory()
