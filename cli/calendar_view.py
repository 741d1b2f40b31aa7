"""``greserve calendar``: GPUs against time in the terminal, like the booking sheet it replaces.

One row per GPU (``node:index``), one column per time slot, as many slots as fit the terminal's
``width``. A reservation fills its slots with its letter (the legend names it; MAINT ones
with ``M``), a running job with ``#`` up to its expected end (start + time limit); where a
bar is long enough it carries the reservation's name or the job's user. ``|`` marks now,
``.`` is free, ``x`` a GPU of a node out of service (drained, DOWN: the legend says why).
Pure: the caller passes the data and whether to colour.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

HOUR = 3600.0
DAY = 24 * HOUR
PERIODS = {"DAILY": DAY, "WEEKLY": 7 * DAY}
STEPS = (HOUR / 2, HOUR, 2 * HOUR, 3 * HOUR, 4 * HOUR, 6 * HOUR, 8 * HOUR, 12 * HOUR, DAY)
_COLOURS = ("\x1b[44m", "\x1b[42m", "\x1b[45m", "\x1b[46m", "\x1b[43m")
_JOB, _MAINT, _NOW, _OUT, _RESET = "\x1b[1;7m", "\x1b[41m", "\x1b[1;31m", "\x1b[2m", "\x1b[0m"
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
    user: str = ""


def slot_seconds(days: int, columns: int) -> float:
    """The narrowest slot of ``STEPS`` that fits ``days`` into ``columns`` (a day when
    none does)."""
    return next((s for s in STEPS if days * DAY / s <= columns), DAY)


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
    width: int = 80,
    out_of_service: Mapping[str, str] | None = None,
) -> str:
    """The calendar as text no wider than ``width`` (ANSI colours only when ``colour``).
    ``out_of_service``: node -> why (its free slots show ``x``). Only the reservations
    drawn on the rows shown are in the legend."""
    down = out_of_service or {}
    label = max((len(f"{n}:{i}") for n, i in gpus), default=3)
    step = slot_seconds(days, max(width - label - 1, 1))
    count = int(days * DAY // step)
    end = start + count * step
    shown = set(gpus)
    drawn = [b for b in bookings if b.cells & shown and windows(b, start, end)]
    letters = {b.name: ("M" if "MAINT" in b.flags else _LETTERS[i % 25]) for i, b in
               enumerate(sorted(drawn, key=lambda b: (b.start, b.name)))}  # fmt: skip
    colours = {name: _COLOURS[i % len(_COLOURS)] for i, name in enumerate(letters)}
    lines = [" " * (label + 1) + _axis(start, step, count)]
    now_col = int((now - start) // step) if start <= now < end else -1
    for node, index in gpus:
        marks = [
            _mark((node, index), start + k * step, start + (k + 1) * step, drawn, running)
            for k in range(count)
        ]
        text = _bars(marks, letters, node in down)
        cells = [_paint(ch, m, letters, colours, colour) for ch, m in zip(text, marks, strict=True)]
        if 0 <= now_col < count:
            cells[now_col] = f"{_NOW}|{_RESET}" if colour else "|"
        lines.append(f"{node}:{index}".ljust(label) + " " + "".join(cells))
    legend = [f"{letters[b.name]} {b.name}" for b in drawn]
    lines.append("")
    lines.extend(_wrap(["# running job", "| now", ". free", *legend], width))
    lines.extend(f"x {node}: {why}" for node, why in sorted(down.items()) if node in dict(gpus))
    lines.append(f"one column = {step / HOUR:g} h, from {_fmt(start)}")
    return "\n".join(lines)


def _mark(
    cell: tuple[str, int],
    a: float,
    b: float,
    bookings: Sequence[Booking],
    running: Sequence[Running],
) -> Booking | Running | None:
    """What fills the slot ``[a, b)`` of ``cell``: a running job first, then a booking."""
    for j in running:
        if cell in j.cells and j.start < b and a < j.end:
            return j
    for bk in bookings:
        if cell in bk.cells and windows(bk, a, b):
            return bk
    return None


def _bars(marks: Sequence[Booking | Running | None], letters: Mapping[str, str], down: bool) -> str:
    """One row's characters: each run of slots of one job or booking is a bar of ``#`` or
    its letter, carrying the user or name (then one mark) where the bar is long enough."""
    out: list[str] = []
    k = 0
    while k < len(marks):
        m = marks[k]
        run = 1
        while k + run < len(marks) and marks[k + run] is m:
            run += 1
        if m is None:
            out.append(("x" if down else ".") * run)
        else:
            ch = "#" if isinstance(m, Running) else letters[m.name]
            name = (m.user or m.job_id) if isinstance(m, Running) else m.name
            out.append(ch + name + ch * (run - len(name) - 1) if run > len(name) else ch * run)
        k += run
    return "".join(out)


def _paint(
    ch: str,
    m: Booking | Running | None,
    letters: Mapping[str, str],
    colours: Mapping[str, str],
    colour: bool,
) -> str:
    if not colour or (m is None and ch == "."):
        return ch
    if m is None:
        return f"{_OUT}{ch}{_RESET}"
    if isinstance(m, Running):
        return f"{_JOB}{ch}{_RESET}"
    code = _MAINT if letters[m.name] == "M" else colours[m.name]
    return f"{code}{ch}{_RESET}"


def _wrap(items: Sequence[str], width: int) -> list[str]:
    """``items`` two spaces apart, on as many lines of at most ``width`` as they need."""
    lines: list[str] = []
    line = ""
    for item in items:
        if line and len(line) + 2 + len(item) > width:
            lines.append(line)
            line = ""
        line = f"{line}  {item}" if line else item
    return [*lines, line] if line else lines


def _axis(start: float, step: float, count: int) -> str:
    """Day labels where a day begins (local time), padded to the columns."""
    out = [" "] * count
    for k in range(count):
        t = datetime.fromtimestamp(start + k * step).astimezone()
        if k == 0 or (t.hour == 0 and t.minute == 0):
            label = t.strftime("%a %d") if DAY / step >= 7 else t.strftime("%d")
            for j, ch in enumerate(label):
                if k + j < count:
                    out[k + j] = ch
    return "".join(out)


def _fmt(t: float) -> str:
    return datetime.fromtimestamp(t).astimezone().strftime("%Y-%m-%d %H:%M %Z")
