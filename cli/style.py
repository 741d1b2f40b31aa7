"""Terminal styling: colour only on a terminal, and never when NO_COLOR is set."""

from __future__ import annotations

import os
from typing import TextIO


def colour_enabled(stream: TextIO) -> bool:
    """True when ``stream`` is a terminal, ``NO_COLOR`` is unset and ``TERM`` is not ``dumb``."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return stream.isatty()


def terminal_width(stream: TextIO) -> int:
    """The columns to fit output in: ``COLUMNS`` when set to a positive number, else the
    terminal's width when ``stream`` is one; 0 (no limit) for a pipe or file."""
    text = os.environ.get("COLUMNS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    if not stream.isatty():
        return 0
    import shutil

    return shutil.get_terminal_size().columns
