"""Files and directories readable by their owner only (the database, data, job output)."""

from __future__ import annotations

import os
from pathlib import Path


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if needed and make it mode 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty if missing (its directory 0700 when created here) and make it
    mode 0600, so that a program creating it later inherits no wider mode."""
    if not path.parent.exists():
        private_dir(path.parent)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    path.chmod(0o600)
    return path
