"""GPUs as NVML sees them, through pynvml (nvidia-ml-py).

``NvmlBackend()`` initialises NVML and reads the inventory once; it raises ``pynvml.NVMLError``
(or ``OSError``) when NVML cannot be loaded or initialised. ``sample()`` never raises: a GPU whose
calls fail carries ``error`` and the others are still sampled. Device handles are kept from
start-up (NVML handles stay valid until ``nvmlShutdown``), so a sample is a handful of NVML calls
per GPU.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import pynvml as nv

from rota.gpus import GpuInfo, GpuLink
from rota.messages import GpuProcess, GpuTelemetry, Inventory

log = logging.getLogger("rota.agent")

T = TypeVar("T")

LEVEL_NAMES = {
    nv.NVML_TOPOLOGY_INTERNAL: "SAME",
    nv.NVML_TOPOLOGY_SINGLE: "PIX",
    nv.NVML_TOPOLOGY_MULTIPLE: "PXB",
    nv.NVML_TOPOLOGY_HOSTBRIDGE: "PHB",
    nv.NVML_TOPOLOGY_NODE: "NODE",
    nv.NVML_TOPOLOGY_SYSTEM: "SYS",
}
P2P_READ = 0  # NVML_P2P_CAPS_INDEX_READ (a tuple ``(0,)`` in nvidia-ml-py 13.615)
LOST = "GPU is lost (NVML_ERROR_GPU_IS_LOST)"
DISAPPEARED = "GPU disappeared from NVML device count"


def describe(exc: nv.NVMLError) -> str:
    """The ``GpuTelemetry.error`` text for an NVML error."""
    if isinstance(exc, nv.NVMLError_GpuIsLost):
        return LOST
    return f"NVML error: {exc}"


def cuda_version_text(version: int) -> str:
    """NVML's integer CUDA version (12040) as ``"12.4"``."""
    return f"{version // 1000}.{version % 1000 // 10}"


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _bus_key(bus_id: str | bytes) -> str:
    """PCI bus id normalised to NVML's 8-digit-domain upper-case form."""
    text = _text(bus_id).strip().upper()
    domain, _, rest = text.partition(":")
    return f"{domain.zfill(8)}:{rest}" if rest else text


def _optional(call: Callable[..., T], *args: Any, default: T) -> T:
    """Call an NVML query whose absence on this GPU is normal (NOT_SUPPORTED)."""
    try:
        return call(*args)
    except nv.NVMLError_NotSupported:
        return default


class NvmlBackend:
    """The ``GpuBackend`` on real (or fake) NVML. Call ``close()`` to shut NVML down."""

    def __init__(self) -> None:
        nv.nvmlInit()
        try:
            self._use_memory_v2 = True
            self._use_temperature_v = True
            self._handles: list[Any | None] = []
            self._inventory = self._read_inventory()
        except BaseException:
            nv.nvmlShutdown()
            raise
        self._closed = False

    # -- inventory ---------------------------------------------------------------------------

    def inventory(self) -> Inventory:
        """The node's GPUs as read at start-up (a GPU unreadable then has empty fields)."""
        return self._inventory

    def _read_inventory(self) -> Inventory:
        count = nv.nvmlDeviceGetCount()
        gpus = [self._read_gpu(i) for i in range(count)]
        return Inventory(
            gpus=tuple(gpus),
            links=self._read_links(gpus),
            driver_version=_text(nv.nvmlSystemGetDriverVersion()),
            cuda_version=cuda_version_text(nv.nvmlSystemGetCudaDriverVersion()),
        )

    def _read_gpu(self, index: int) -> GpuInfo:
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            major, minor = nv.nvmlDeviceGetCudaComputeCapability(handle)
            info = GpuInfo(
                index=index,
                uuid=_text(nv.nvmlDeviceGetUUID(handle)),
                name=_text(nv.nvmlDeviceGetName(handle)),
                memory_total=self._memory(handle).total,
                pci_bus_id=_bus_key(nv.nvmlDeviceGetPciInfo(handle).busId),
                compute_capability=f"{major}.{minor}",
            )
        except nv.NVMLError as exc:
            log.warning("GPU %d could not be read at start-up: %s", index, describe(exc))
            self._handles.append(None)
            return GpuInfo(index=index, uuid="", name="", memory_total=0)
        self._handles.append(handle)
        return info

    def _memory(self, handle: Any) -> Any:
        """Memory info: the v2 struct (``used`` excludes driver-reserved memory) where present."""
        if self._use_memory_v2:
            try:
                return nv.nvmlDeviceGetMemoryInfo(handle, version=nv.nvmlMemory_v2)
            except (nv.NVMLError_FunctionNotFound, nv.NVMLError_ArgumentVersionMismatch):
                self._use_memory_v2 = False
        return nv.nvmlDeviceGetMemoryInfo(handle)

    def _read_links(self, gpus: list[GpuInfo]) -> tuple[GpuLink, ...]:
        """Every readable GPU pair: NVLink count as ``NV<n>`` if linked, else the PCIe level."""
        ok = [(g, h) for g, h in zip(gpus, self._handles, strict=True) if h is not None]
        if len(ok) < 2:
            return ()
        by_bus = {g.pci_bus_id: g.index for g, _ in ok}
        direct: dict[tuple[int, int], int] = {}
        switch: dict[int, int] = {}
        for gpu, handle in ok:
            for remote in self._nvlink_remotes(handle):
                peer = by_bus.get(remote)
                if peer is None:
                    switch[gpu.index] = switch.get(gpu.index, 0) + 1
                elif peer != gpu.index:
                    key = (min(gpu.index, peer), max(gpu.index, peer))
                    direct[key] = direct.get(key, 0) + 1
        links = []
        for n, (a, ha) in enumerate(ok):
            for b, hb in ok[n + 1 :]:
                # Each direct link is seen from both ends.
                nvlinks = direct.get((a.index, b.index), 0) // 2
                nvlinks += min(switch.get(a.index, 0), switch.get(b.index, 0))
                links.append(
                    GpuLink(a.index, b.index, self._level(ha, hb, nvlinks), self._p2p(ha, hb))
                )
        return tuple(links)

    @staticmethod
    def _nvlink_remotes(handle: Any) -> list[str]:
        """PCI bus ids at the far end of each active NVLink; empty without NVLink."""
        remotes = []
        for link in range(nv.NVML_NVLINK_MAX_LINKS):
            try:
                if not nv.nvmlDeviceGetNvLinkState(handle, link):
                    continue
                remotes.append(_bus_key(nv.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId))
            except nv.NVMLError:
                break  # NOT_SUPPORTED (no NVLink) or INVALID_ARGUMENT (past the last link)
        return remotes

    @staticmethod
    def _level(a: Any, b: Any, nvlinks: int) -> str:
        if nvlinks:
            return f"NV{nvlinks}"
        try:
            level = nv.nvmlDeviceGetTopologyCommonAncestor(a, b)
        except nv.NVMLError as exc:
            log.warning("NVML topology query failed: %s", describe(exc))
            return "UNKNOWN"
        return LEVEL_NAMES.get(level, "UNKNOWN")

    @staticmethod
    def _p2p(a: Any, b: Any) -> bool:
        try:
            return bool(nv.nvmlDeviceGetP2PStatus(a, b, P2P_READ) == nv.NVML_P2P_STATUS_OK)
        except nv.NVMLError:
            return False

    # -- telemetry ---------------------------------------------------------------------------

    def sample(self) -> list[GpuTelemetry]:
        """Live values for every inventory GPU, in index order; never raises.

        A failing GPU carries ``error`` (``LOST`` or ``"NVML error: ..."``); when the device count
        drops below the inventory's, GPUs NVML no longer knows by UUID carry ``DISAPPEARED``.
        A metric the GPU does not support (NOT_SUPPORTED) reads 0 and is not an error.
        """
        gpus = self._inventory.gpus
        try:
            count = nv.nvmlDeviceGetCount()
        except nv.NVMLError as exc:
            return [GpuTelemetry(index=g.index, uuid=g.uuid, error=describe(exc)) for g in gpus]
        samples = [self._sample_one(g) for g in gpus]
        if count < len(gpus):
            samples = [
                GpuTelemetry(index=s.index, uuid=s.uuid, error=DISAPPEARED)
                if s.error and self._gone(g.uuid)
                else s
                for g, s in zip(gpus, samples, strict=True)
            ]
        return samples

    def _sample_one(self, gpu: GpuInfo) -> GpuTelemetry:
        handle = self._handles[gpu.index]
        try:
            if handle is None:  # unreadable at start-up: report why, every time
                nv.nvmlDeviceGetUUID(nv.nvmlDeviceGetHandleByIndex(gpu.index))
                return GpuTelemetry(gpu.index, error="GPU was unreadable at agent start-up")
            util = _optional(nv.nvmlDeviceGetUtilizationRates, handle, default=None)
            power = _optional(nv.nvmlDeviceGetPowerUsage, handle, default=0)
            temp = _optional(self._temperature, handle, default=0)
            return GpuTelemetry(
                index=gpu.index,
                uuid=gpu.uuid,
                utilization=float(util.gpu) if util is not None else 0.0,
                memory_used=int(self._memory(handle).used),
                temperature=float(temp),
                power=power / 1000.0,
                processes=self._processes(handle),
            )
        except nv.NVMLError as exc:
            return GpuTelemetry(index=gpu.index, uuid=gpu.uuid, error=describe(exc))

    def _temperature(self, handle: Any) -> int:
        """GPU core temperature: ``nvmlDeviceGetTemperatureV`` where the driver has it."""
        if self._use_temperature_v:
            try:
                return int(nv.nvmlDeviceGetTemperatureV(handle, nv.NVML_TEMPERATURE_GPU))
            except (nv.NVMLError_FunctionNotFound, nv.NVMLError_ArgumentVersionMismatch):
                self._use_temperature_v = False
        return int(nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU))

    @staticmethod
    def _processes(handle: Any) -> tuple[GpuProcess, ...]:
        procs: list[Any] = _optional(nv.nvmlDeviceGetComputeRunningProcesses, handle, default=[])
        return tuple(GpuProcess(int(p.pid), int(p.usedGpuMemory or 0)) for p in procs)

    @staticmethod
    def _gone(uuid: str) -> bool:
        """True when NVML no longer knows this UUID (as opposed to knowing it is failing)."""
        try:
            nv.nvmlDeviceGetHandleByUUID(uuid)
        except nv.NVMLError_NotFound:
            return True
        except nv.NVMLError:
            return False
        return False

    def close(self) -> None:
        """Shut NVML down once; later calls do nothing."""
        if not self._closed:
            self._closed = True
            try:
                nv.nvmlShutdown()
            except nv.NVMLError as exc:
                log.warning("nvmlShutdown failed: %s", exc)
