"""Terminal styling: colour only on a terminal, and never when NO_COLOR is set."""

from __future__ import annotations

import os
from typing import TextIO


def colour_enabled(stream: TextIO) -> bool:
    """True when ``stream`` is a terminal, ``NO_COLOR`` is unset and ``TERM`` is not ``dumb``."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return stream.isatty()
