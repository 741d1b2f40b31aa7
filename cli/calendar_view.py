"""``greserve calendar``: GPUs against time in the terminal, like the booking sheet it replaces.

One row per GPU (``node:index``), one column per time slot. A reservation fills its slots with
its letter (the legend names it; MAINT ones with ``M``), a running job with ``#`` up to its
expected end (start + time limit), ``|`` marks now, ``.`` is free. Pure: the caller passes
the data and whether to colour.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

HOUR = 3600.0
DAY = 24 * HOUR
PERIODS = {"DAILY": DAY, "WEEKLY": 7 * DAY}
_COLOURS = ("\x1b[44m", "\x1b[42m", "\x1b[45m", "\x1b[46m", "\x1b[43m")
_JOB, _MAINT, _NOW, _RESET = "\x1b[1;7m", "\x1b[41m", "\x1b[1;31m", "\x1b[0m"
_LETTERS = "ABCDEFGHIJKLNOPQRSTUVWXYZ"  # no M: MAINT


@dataclass(frozen=True, slots=True)
class Booking:
    name: str
    start: float
    end: float
    cells: frozenset[tuple[str, int]]
    flags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Running:
    job_id: str
    start: float
    end: float  # expected: start + time limit
    cells: frozenset[tuple[str, int]]


def slot_seconds(days: int) -> float:
    """Column width: half an hour for one day, then wider so a row stays near 48-84 columns."""
    return HOUR / 2 if days <= 1 else max(HOUR, days * DAY / 84 // HOUR * HOUR)


def windows(b: Booking, start: float, end: float) -> list[tuple[float, float]]:
    """``b``'s windows meeting ``[start, end)``, recurring ones repeated."""
    period = next((PERIODS[f] for f in b.flags if f in PERIODS), 0.0)
    out, s, e = [], b.start, b.end
    while s < end:
        if e > start:
            out.append((s, e))
        if not period:
            break
        s, e = s + period, e + period
    return out


def render(
    gpus: Sequence[tuple[str, int]],
    bookings: Sequence[Booking],
    running: Sequence[Running],
    start: float,
    days: int,
    now: float,
    colour: bool,
) -> str:
    """The calendar as text (ANSI colours only when ``colour``)."""
    step = slot_seconds(days)
    count = int(days * DAY // step)
    letters = {b.name: ("M" if "MAINT" in b.flags else _LETTERS[i % 25]) for i, b in
               enumerate(sorted(bookings, key=lambda b: (b.start, b.name)))}  # fmt: skip
    colours = {name: _COLOURS[i % len(_COLOURS)] for i, name in enumerate(letters)}
    width = max((len(f"{n}:{i}") for n, i in gpus), default=3)
    lines = [" " * (width + 1) + _axis(start, step, count)]
    now_col = int((now - start) // step) if start <= now < start + count * step else -1
    for node, index in gpus:
        cells = []
        for k in range(count):
            a, b = start + k * step, start + (k + 1) * step
            cells.append(_cell((node, index), a, b, bookings, running, letters, colours, colour))
            if k == now_col:
                cells[-1] = f"{_NOW}|{_RESET}" if colour else "|"
        lines.append(f"{node}:{index}".ljust(width) + " " + "".join(cells))
    legend = [f"{letters[b.name]} {b.name}" for b in bookings if b.name in letters]
    lines.append("")
    lines.append("  ".join(["# running job", "| now", ". free", *legend]))
    lines.append(f"one column = {step / HOUR:g} h, from {_fmt(start)}")
    return "\n".join(lines)


def _cell(
    cell: tuple[str, int],
    a: float,
    b: float,
    bookings: Sequence[Booking],
    running: Sequence[Running],
    letters: dict[str, str],
    colours: dict[str, str],
    colour: bool,
) -> str:
    if any(cell in j.cells and j.start < b and a < j.end for j in running):
        return f"{_JOB}#{_RESET}" if colour else "#"
    for bk in bookings:
        if cell in bk.cells and windows(bk, a, b):
            mark = letters[bk.name]
            code = _MAINT if mark == "M" else colours[bk.name]
            return f"{code}{mark}{_RESET}" if colour else mark
    return "."


def _axis(start: float, step: float, count: int) -> str:
    """Day labels where a day begins (local time), padded to the columns."""
    out = [" "] * count
    for k in range(count):
        t = datetime.fromtimestamp(start + k * step).astimezone()
        if k == 0 or (t.hour == 0 and t.minute == 0):
            label = t.strftime("%a %d")
            for j, ch in enumerate(label):
                if k + j < count:
                    out[k + j] = ch
    return "".join(out)


def _fmt(t: float) -> str:
    return datetime.fromtimestamp(t).astimezone().strftime("%Y-%m-%d %H:%M %Z")
