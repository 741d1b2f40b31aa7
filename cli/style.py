"""Terminal styling: colour only on a terminal, and never when NO_COLOR is set."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import argparse


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


def help_formatter(prog: str) -> argparse.HelpFormatter:
    """argparse's help formatter at the width ``shutil.get_terminal_size`` tells (``COLUMNS``,
    else standard output's terminal, else 80), without importing shutil (~7 M instructions):
    argparse builds a formatter for every ``add_argument``, and its own imports shutil."""
    import argparse
    import sys

    text = os.environ.get("COLUMNS", "")
    columns = int(text) if text.isdigit() else 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return argparse.HelpFormatter(prog, width=(columns if columns > 0 else 80) - 2)
