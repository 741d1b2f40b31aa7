"""Points in time as SLURM's ``sacct -S/-E`` take them, plus ISO 8601."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

_OFFSET = re.compile(r"^now(?:\s*(?P<sign>[+-])\s*(?P<num>\d+)\s*(?P<unit>[a-z]*))?$")
_UNITS = {
    "": 1,
    "s": 1,
    "sec": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
}
_CLOCK = re.compile(r"^(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?$")
_MMDDYY = re.compile(r"^(?P<mo>\d{2})[/.]?(?P<d>\d{2})(?:[/.]?(?P<y>\d{2}))?$")
HELP = (
    "YYYY-MM-DD[THH:MM[:SS]], MMDD[YY], MM/DD[/YY], HH:MM[:SS], now[-N[minutes|hours|days|"
    "weeks]], today, midnight or noon"
)


def parse_time(text: str, now: datetime) -> float:
    """A Unix time from ``text`` (local time unless an ISO time names its zone); ValueError
    says which forms are accepted."""
    value = text.strip().lower()
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    named = {"today": today, "midnight": today, "noon": today.replace(hour=12)}
    if value in named:
        return named[value].timestamp()
    m = _OFFSET.match(value)
    if m:
        if m.group("num") is None:
            return now.timestamp()
        if m.group("unit") not in _UNITS:
            raise ValueError(f"unknown unit {m.group('unit')!r} in {text!r}")
        step = int(m.group("num")) * _UNITS[m.group("unit")]
        return (now + timedelta(seconds=step if m.group("sign") == "+" else -step)).timestamp()
    m = _CLOCK.match(value)
    if m:
        at = today.replace(hour=int(m.group("h")), minute=int(m.group("m")))
        return at.replace(second=int(m.group("s") or 0)).timestamp()
    m = _MMDDYY.match(value)
    try:
        if m:
            year = 2000 + int(m.group("y")) if m.group("y") else now.year
            return today.replace(
                year=year, month=int(m.group("mo")), day=int(m.group("d"))
            ).timestamp()
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(f"expected {HELP}, got {text!r}") from None
