"""Times as people type them for bookings: ISO 8601, ``now``, ``now+2h``, ``tomorrow 09:00``,
``monday 09:00``. Pure: the current time and the time zone are arguments."""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta, tzinfo

from rota.units import parse_duration

TIME_HELP = (
    "a time such as 2026-11-23T09:00 (ISO 8601; no zone = local time), now, now+2h, "
    "today 14:00, tomorrow 09:00 or monday 09:00"
)
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY_TIME = re.compile(r"^(?P<day>[a-z]+)(?:\s+(?P<h>\d{1,2}):(?P<m>\d{2}))?$")


def parse_when(text: str, now: datetime) -> float:
    """Unix seconds for ``text``; ``now`` is timezone-aware and gives the local zone.

    A weekday means the next such day (today if that time is still ahead); a day without a
    time means its midnight. ValueError names the accepted forms.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    raw = text.strip()
    lower = raw.lower()
    if lower.startswith("now"):
        rest = lower[3:].strip()
        if not rest:
            return now.timestamp()
        if rest[0] in "+-" and rest[1:].strip():
            sign = 1.0 if rest[0] == "+" else -1.0
            try:
                return now.timestamp() + sign * parse_duration(rest[1:].strip())
            except ValueError:
                pass
        raise ValueError(f"expected {TIME_HELP}, got {text!r}")
    m = _DAY_TIME.match(lower)
    if m is not None and (m.group("day") in ("today", "tomorrow") or m.group("day") in DAYS):
        return _day_time(m.group("day"), m.group("h"), m.group("m"), now, text).timestamp()
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(f"expected {TIME_HELP}, got {text!r}") from None
    zone: tzinfo = now.tzinfo
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=zone)).timestamp()


def _day_time(
    day: str, hours: str | None, minutes: str | None, now: datetime, text: str
) -> datetime:
    h, mi = int(hours or 0), int(minutes or 0)
    if h > 23 or mi > 59:
        raise ValueError(f"expected {TIME_HELP}, got {text!r} (hour 0-23, minute 0-59)")
    at = time(h, mi)
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
