"""Where rota keeps data and configuration, and where the scheduler listens by default.

Data lives under ``$XDG_DATA_HOME/rota`` (default ``~/.local/share/rota``) and configuration
under ``$XDG_CONFIG_HOME/rota`` (default ``~/.config/rota``), so two users or two test runs never
share state unless told to.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_PORT = 9717
DEFAULT_ADDRESS = f"127.0.0.1:{DEFAULT_PORT}"
DEFAULT_HTTP = "127.0.0.1:9718"  # the scheduler's HTTP port (JSON API) when nothing else is set


def data_dir() -> Path:
    """The user's rota data directory (not created here)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "rota"


def config_dir() -> Path:
    """The user's rota configuration directory (not created here)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rota"


def config_file() -> Path:
    """The CLI/daemon configuration file, ``config.yaml`` in the config directory."""
    return config_dir() / "config.yaml"
