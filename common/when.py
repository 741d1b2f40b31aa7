"""rota's one grammar for points in time that people type: the CLI (``greserve``, reservation
files, ``gacct -S/-E``), job files (``begin``) and the web API (time query parameters and
bookings). Pure: the current time, and with it the zone of a time that names none, are
arguments (the CLI and job files pass local time, the web API UTC).

Forms (case-insensitive, surrounding spaces ignored):

- ISO 8601: ``2026-11-23``, ``2026-11-23T09:00[:SS]`` (or a space for ``T``), optionally with a
  zone (``Z``, ``+01:00``).
- ``now``, ``now+AMOUNT``, ``now-AMOUNT``: AMOUNT is a count with a SLURM unit (``90``,
  ``2hours``, ``30 minutes``, ``1day``, ``2weeks``; a bare count is seconds, as in SLURM's
  ``--begin`` and ``sacct -S``) or a rota duration (``90s``, ``30m``, ``2h``, ``1.5h``,
  ``3d``, ``MM:SS``, ``HH:MM:SS``, ``D-HH:MM:SS``).
- ``today``, ``tomorrow``, a weekday (``monday``: the next one, today while that time is still
  ahead), each with an optional ``HH:MM[:SS]`` (else midnight); ``midnight`` and ``noon``
  (today's).
- ``HH:MM[:SS]``: today at that time.
- ``MMDD[YY]``, ``MM/DD[/YY]``, ``MM.DD[.YY]``: that day's midnight (this year unless given).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, time, timedelta

from rota.units import parse_duration

HELP = (
    "a time such as 2026-11-23T09:00 (ISO 8601; no zone = {zone}), now, now+2h, now-30m, "
    "now-2hours, now+90 (seconds), today, tomorrow 09:00, monday 09:00, midnight, noon, "
    "HH:MM[:SS] (today), MMDD[YY] or MM/DD[/YY]"
)
LOCAL = "local time"  # the zone ``HELP`` names where ``now`` is not UTC
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_OFFSET = re.compile(r"^now\s*(?:(?P<sign>[+-])\s*(?P<amount>.*))?$")
_COUNT = re.compile(r"^(?P<num>\d{1,10})\s*(?P<unit>[a-z]*)$")
_CLOCK = r"(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?"
_DAY_TIME = re.compile(rf"^(?P<day>[a-z]+)(?:\s+{_CLOCK})?$")
_TIME_ONLY = re.compile(rf"^{_CLOCK}$")
_MMDDYY = re.compile(r"^(?P<mo>\d{2})[/.]?(?P<d>\d{2})(?:[/.]?(?P<y>\d{2}))?$")
_UNITS = {
    **dict.fromkeys(("", "s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600),
    **dict.fromkeys(("d", "day", "days"), 86400),
    **dict.fromkeys(("w", "week", "weeks"), 604800),
}


def time_help(now: datetime) -> str:
    """The accepted forms, naming the zone a time without one is read in (``UTC`` when ``now``
    is in ``datetime.UTC`` itself, as the web API passes it; local time otherwise)."""
    zone = "UTC" if now.tzinfo is UTC else LOCAL
    return HELP.format(zone=zone)


def parse_when(text: str, now: datetime, field: str = "") -> float:
    """Unix seconds for ``text`` (the forms of the module's docstring); ``now`` is
    timezone-aware and gives the zone of times without one. ValueError names ``field`` (when
    given) and the accepted forms."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    raw = text.strip()
    try:
        return _parse(raw, raw.lower(), now)
    except ValueError as exc:
        detail = f" ({exc})" if str(exc) else ""
        prefix = f"{field}: " if field else ""
        raise ValueError(f"{prefix}expected {time_help(now)}, got {text!r}{detail}") from None


def _parse(raw: str, value: str, now: datetime) -> float:
    """``value`` (``raw`` lowered) as Unix seconds; a bare ValueError when no form matches,
    one with a message when a form matches but a part is out of range."""
    offset = _OFFSET.match(value)
    if offset is not None:
        if offset.group("sign") is None:
            return now.timestamp()
        sign = 1.0 if offset.group("sign") == "+" else -1.0
        return now.timestamp() + sign * _amount(offset.group("amount").strip())
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if value in ("midnight", "noon"):
        return today.replace(hour=12 if value == "noon" else 0).timestamp()
    day = _DAY_TIME.match(value)
    if day is not None and (day.group("day") in ("today", "tomorrow", *DAYS)):
        return _day_time(day.group("day"), _clock(day), now).timestamp()
    clock = _TIME_ONLY.match(value)
    if clock is not None:
        return datetime.combine(today.date(), _clock(clock), now.tzinfo).timestamp()
    short = _MMDDYY.match(value)
    if short is not None:
        year = 2000 + int(short.group("y")) if short.group("y") else now.year
        try:
            return today.replace(
                year=year, month=int(short.group("mo")), day=int(short.group("d"))
            ).timestamp()
        except ValueError as exc:
            raise ValueError(str(exc)) from None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError() from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=now.tzinfo)).timestamp()


def _amount(text: str) -> float:
    """Seconds of the AMOUNT after ``now+``/``now-``."""
    count = _COUNT.match(text)
    if count is not None:
        if count.group("unit") not in _UNITS:
            raise ValueError(f"unknown unit {count.group('unit')!r}")
        return int(count.group("num")) * float(_UNITS[count.group("unit")])
    if not text:
        raise ValueError()
    try:
        seconds = parse_duration(text)
    except (ValueError, OverflowError):
        raise ValueError() from None
    if not math.isfinite(seconds):
        raise ValueError("amount out of range")
    return seconds


def _clock(m: re.Match[str]) -> time:
    if m.group("h") is None:
        return time(0, 0)
    h, mi, s = int(m.group("h")), int(m.group("m")), int(m.group("s") or 0)
    if h > 23 or mi > 59 or s > 59:
        raise ValueError("hour 0-23, minute 0-59, second 0-59")
    return time(h, mi, s)


def _day_time(day: str, at: time, now: datetime) -> datetime:
    today = now.date()
    if day == "today":
        date = today
    elif day == "tomorrow":
        date = today + timedelta(days=1)
    else:
        ahead = (DAYS.index(day) - today.weekday()) % 7
        date = today + timedelta(days=ahead)
        if ahead == 0 and datetime.combine(date, at, now.tzinfo) <= now:
            date += timedelta(days=7)
    return datetime.combine(date, at, now.tzinfo)
