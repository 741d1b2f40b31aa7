"""Which finished jobs ``gacct --efficiency`` and the dashboard list: GPUs mostly idle, GPU
memory nearly exhausted, or ended by an idle rule."""

from __future__ import annotations

IDLE_BELOW = 10.0  # percent mean utilisation: "mostly idle"
MEMORY_WITHIN = 0.05  # peak within this fraction of the GPU's memory


RECLAIMED_REASONS = ("Idle", "(idle_gpu_cancel_after)")  # a grun session's, a batch job's


def efficiency_flags(
    utilization: float | None,
    memory_peak: int | None,
    memory_total: int | None,
    idle_below: float,
    reason: str = "",
) -> list[str]:
    """Why a finished job is worth a look: ``idle`` GPUs (mean utilisation below
    ``idle_below``), ``memory`` nearly exhausted, ``reclaimed`` (``reason``: it was ended by
    idle reclamation). None: no NVML figures were recorded."""
    flags = []
    if utilization is not None and utilization < idle_below:
        flags.append("idle")
    if (
        memory_total
        and memory_peak is not None
        and memory_peak >= memory_total * (1 - MEMORY_WITHIN)
    ):
        flags.append("memory")
    if reason == RECLAIMED_REASONS[0] or RECLAIMED_REASONS[1] in reason:
        flags.append("reclaimed")
    return flags
