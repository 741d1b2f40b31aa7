"""Parsing of the durations and sizes users write in job files and flags.

Durations: SLURM forms (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``)
and suffixed forms (``90s``, ``30m``, ``2h``, ``3d``). Sizes: Kubernetes quantities
(``512Mi``, ``40Gi``, ``40G`` = 40 * 10**9, ``1k``) plus ``KiB/MiB/GiB/TiB`` (binary) and
``KB/MB/GB/TB`` (decimal); a bare number is bytes.
"""

from __future__ import annotations

import re

_SUFFIX_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SLURM_DURATION = re.compile(
    r"^(?:(?P<days>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?"
    r"|(?P<a>\d+)(?::(?P<b>\d+)(?::(?P<c>\d+))?)?)$"
)
_SIZE_FACTORS = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "B": 1,
}
_SIZE = re.compile(r"^(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]*)$")

DURATION_HELP = "a duration such as 90s, 30m, 2h, 3d, MM:SS, HH:MM:SS or D-HH:MM:SS"
SIZE_HELP = "a size such as 512Mi, 40Gi, 40G, 16GiB or 500MB"


def parse_duration(value: str | int | float) -> float:
    """Return seconds for a duration; raise ValueError naming the accepted forms.

    A bare integer (or integer string) is minutes, as in SLURM.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected {DURATION_HELP}, got {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"expected {DURATION_HELP}, got a negative number")
        return float(value) * 60.0
    text = str(value).strip()
    if text and text[-1] in _SUFFIX_SECONDS and text[:-1].replace(".", "", 1).isdigit():
        return float(text[:-1]) * _SUFFIX_SECONDS[text[-1]]
    m = _SLURM_DURATION.match(text)
    if not m:
        raise ValueError(f"expected {DURATION_HELP}, got {text!r}")
    if m.group("days") is not None:
        days, hours = int(m.group("days")), int(m.group("dh"))
        minutes, seconds = int(m.group("dm") or 0), int(m.group("ds") or 0)
        return float(days * 86400 + hours * 3600 + minutes * 60 + seconds)
    parts = [int(p) for p in (m.group("a"), m.group("b"), m.group("c")) if p is not None]
    if len(parts) == 1:
        return float(parts[0] * 60)
    if len(parts) == 2:
        return float(parts[0] * 60 + parts[1])
    return float(parts[0] * 3600 + parts[1] * 60 + parts[2])


def parse_size(value: str | int) -> int:
    """Return bytes for a size; raise ValueError naming the accepted forms."""
    if isinstance(value, bool):
        raise ValueError(f"expected {SIZE_HELP}, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"expected {SIZE_HELP}, got a negative number")
        return value
    text = str(value).strip()
    m = _SIZE.match(text)
    if not m or m.group("unit") not in _SIZE_FACTORS:
        raise ValueError(f"expected {SIZE_HELP}, got {text!r}")
    return int(float(m.group("num")) * _SIZE_FACTORS[m.group("unit")])


def format_duration(seconds: float | None) -> str:
    """SLURM-style elapsed time: ``M:SS``, ``H:MM:SS`` or ``D-HH:MM:SS``."""
    if seconds is None:
        return ""
    total = max(0, int(seconds))
    days, rem = divmod(total, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def format_size(num_bytes: int) -> str:
    """Binary size for tables: ``40Gi``, ``512Mi``."""
    value = float(num_bytes)
    for unit in ("", "Ki", "Mi", "Gi", "Ti"):
        if value < 1024 or unit == "Ti":
            return f"{value:.0f}{unit}" if unit == "" or value >= 10 else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.0f}Ti"
