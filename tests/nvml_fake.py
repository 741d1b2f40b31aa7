"""Helpers for the fake ``libnvidia-ml.so.1`` built from ``tests/fakenvml/fake_nvml.c``.

The fake reads its GPUs from the JSON file named by ``FAKE_NVML_CONFIG`` and re-reads it when
the file changes, so tests rewrite that file (atomically, with ``write_fake_config``) to change
GPU state while an agent runs. In-process users call ``preload_fake_nvml`` before ``nvmlInit``;
subprocesses get ``fake_nvml_env`` (``LD_LIBRARY_PATH`` plus ``FAKE_NVML_CONFIG``).

Fixtures (import them into a test module or conftest): ``fake_nvml_lib`` (session: the built
library's directory) and ``fake_nvml`` (a config with two idle GPUs, ``FAKE_NVML_CONFIG`` set, the
fake preloaded in-process).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SOURCE = Path(__file__).resolve().parent / "fakenvml" / "fake_nvml.c"
LIB_NAME = "libnvidia-ml.so.1"
GiB = 2**30

# NVML_TOPOLOGY_* levels.
INTERNAL, SINGLE, MULTIPLE, HOSTBRIDGE, NODE, SYSTEM = 0, 10, 20, 30, 40, 50


def build_fake_nvml(dest_dir: Path) -> Path:
    """Compile the fake into ``dest_dir`` unless it is already there and newer than the source.

    Returns the directory holding ``libnvidia-ml.so.1``. Raises ``RuntimeError`` without gcc.
    """
    dest_dir = Path(dest_dir)
    lib = dest_dir / LIB_NAME
    if lib.exists() and lib.stat().st_mtime >= SOURCE.stat().st_mtime:
        return dest_dir
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise RuntimeError("gcc is needed to build the fake NVML library")
    dest_dir.mkdir(parents=True, exist_ok=True)
    # Build beside the target and rename, so parallel builders never see half a library.
    fd, tmp = tempfile.mkstemp(dir=dest_dir, suffix=".so")
    os.close(fd)
    try:
        subprocess.run(
            [gcc, "-shared", "-fPIC", "-O1", "-Wl,-soname," + LIB_NAME, "-o", tmp, str(SOURCE)],
            check=True,
            capture_output=True,
            text=True,
        )
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest_dir


def fake_gpu(index: int, **overrides: Any) -> dict[str, Any]:
    """One healthy idle A100 80GB at PCI bus ``index + 7``; ``overrides`` replace its fields."""
    gpu: dict[str, Any] = {
        "uuid": f"GPU-{index:08x}-fake-4e6f-8a1b-{index:012x}",
        "name": "NVIDIA A100-SXM4-80GB",
        "memory_total": 80 * GiB,
        "memory_used": 0,
        "pci_bus_id": f"00000000:{index + 7:02X}:00.0",
        "cc_major": 8,
        "cc_minor": 0,
        "utilization": 0,
        "temperature": 40,
        "power_mw": 60000,
        "lost": False,
        "error": False,
        "processes": [],
    }
    gpu.update(overrides)
    return gpu


def write_fake_config(
    path: Path,
    gpus: list[dict[str, Any]],
    topology: list[list[int]] | None = None,
    p2p: list[list[int]] | None = None,
    nvlink: list[list[int]] | None = None,
    driver_version: str = "550.54.15",
    cuda_version: int = 12040,
) -> Path:
    """Write the fake's JSON atomically (temp file + rename) and return ``path``."""
    path = Path(path)
    doc: dict[str, Any] = {
        "driver_version": driver_version,
        "cuda_version": cuda_version,
        "gpus": gpus,
    }
    for key, value in (("topology", topology), ("p2p", p2p), ("nvlink", nvlink)):
        if value is not None:
            doc[key] = value
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)
    return path


def preload_fake_nvml(lib_dir: Path) -> ctypes.CDLL:
    """Load the fake by full path with RTLD_GLOBAL, so pynvml's ``CDLL("libnvidia-ml.so.1")``
    finds it (same soname) instead of searching the library path. Call before ``nvmlInit``."""
    return ctypes.CDLL(str(Path(lib_dir) / LIB_NAME), mode=ctypes.RTLD_GLOBAL)


def fake_nvml_env(
    lib_dir: Path, config: Path, base: dict[str, str] | None = None
) -> dict[str, str]:
    """Environment for a subprocess that should load the fake through ``LD_LIBRARY_PATH``."""
    env = dict(os.environ if base is None else base)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = str(lib_dir) + (os.pathsep + old if old else "")
    env["FAKE_NVML_CONFIG"] = str(config)
    return env


@dataclass(frozen=True)
class FakeNvml:
    """A fake NVML set up for one test: its library directory and its JSON config."""

    lib_dir: Path
    config: Path

    def write(self, gpus: list[dict[str, Any]], **kwargs: Any) -> None:
        """Replace the fake's GPUs (``write_fake_config`` keywords: topology, p2p, nvlink...)."""
        write_fake_config(self.config, gpus, **kwargs)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment for a subprocess that should see these GPUs."""
        return fake_nvml_env(self.lib_dir, self.config, base)


@pytest.fixture(scope="session")
def fake_nvml_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory holding the fake ``libnvidia-ml.so.1``, built once per session (per worker)."""
    return build_fake_nvml(tmp_path_factory.getbasetemp() / "fake-nvml")


@pytest.fixture
def fake_nvml(fake_nvml_lib: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeNvml:
    """Two idle fake GPUs, ``FAKE_NVML_CONFIG`` set and the fake preloaded in this process."""
    config = write_fake_config(tmp_path / "fake-nvml.json", [fake_gpu(0), fake_gpu(1)])
    monkeypatch.setenv("FAKE_NVML_CONFIG", str(config))
    preload_fake_nvml(fake_nvml_lib)
    return FakeNvml(fake_nvml_lib, config)
