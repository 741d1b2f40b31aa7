"""gqueue's tables, from the documented ``gqueue --json`` job objects (pure: no I/O).

``--format`` takes SLURM's squeue letters (``gqueue_letters``): ``%[.|-][WIDTH]LETTER``; a width
pads the value (on the right, or on the left with ``.``) and cuts it to that width, as squeue
does. Pending tasks of
one array waiting for the same reason share one row (``123_[4-99]``) unless ``-r`` is given.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from rota.cli.gqueue_letters import GPUS, LETTERS, Job

# Colours of state codes on a terminal (ANSI SGR).
STATE_COLOURS = {
    "R": "32",
    "CF": "36",
    "CG": "36",
    "PD": "33",
    "CD": "2",
    "F": "31",
    "TO": "31",
    "NF": "31",
    "OOM": "31",
    "CA": "35",
    "PR": "35",
}


_FIELD = re.compile(r"%(?:(?P<right>\.)|-)?(?P<width>\d+)?(?P<letter>.)?")


class Field(NamedTuple):  # not a dataclass: gqueue starts without importing dataclasses
    letter: str
    width: int | None
    right: bool

    def cell(self, text: str) -> str:
        if self.width is None:
            return text
        text = text[: self.width]
        return text.rjust(self.width) if self.right else text.ljust(self.width)


def parse_format(fmt: str) -> list[Field | str]:
    """Literal text and fields; ValueError naming an unknown letter and listing the known."""
    parts: list[Field | str] = []
    pos = 0
    for m in _FIELD.finditer(fmt):
        if m.start() > pos:
            parts.append(fmt[pos : m.start()])
        pos = m.end()
        letter = m.group("letter")
        if letter == "%":
            parts.append("%")
            continue
        if letter not in LETTERS:
            known = " ".join(f"%{k} ({v.header})" for k, v in LETTERS.items())
            shown = f"%{letter}" if letter else "a lone %"
            raise ValueError(f"unknown field {shown}; known: {known}")
        width = int(m.group("width")) if m.group("width") else None
        parts.append(Field(letter, width, bool(m.group("right"))))
    if pos < len(fmt):
        parts.append(fmt[pos:])
    return parts


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def shown(value: object) -> str:
    """``value`` as one cell: control characters (a newline in a command, an escape sequence)
    written as ``\\n``, ``\\x1b``..., so no field can break or forge a row."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], str(value))


def formatted(parts: Sequence[Field | str], jobs: Iterable[Job], now: float) -> list[str]:
    """The header line then one line per job."""

    def line(job: Job | None) -> str:
        cells = (
            p
            if isinstance(p, str)
            else p.cell(
                LETTERS[p.letter].header
                if job is None
                else shown(LETTERS[p.letter].value(job, now))
            )
            for p in parts
        )
        return "".join(cells).rstrip()

    return [line(None), *(line(j) for j in jobs)]


def _task(job: Job) -> tuple[str, int] | None:
    array, sep, task = job["id"].partition("_")
    return (array, int(task)) if sep and task.isdigit() else None


def compress(ids: Sequence[int]) -> str:
    """``[1, 2, 3, 7, 9, 10]`` -> ``1-3,7,9-10``."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def collapse_arrays(jobs: Sequence[Job]) -> list[Job]:
    """Pending tasks of one array waiting for the same reason become one row ``ID_[a-b,c]``,
    at the place of the first of them; every other job keeps its own row."""
    groups: dict[tuple[str, str], list[int]] = {}
    first: dict[tuple[str, str], int] = {}
    rows: list[Job | tuple[str, str]] = []
    for job in jobs:
        task = _task(job)
        if task is None or job["state"] != "PENDING":
            rows.append(job)
            continue
        key = (task[0], job["reason"])
        if key not in groups:
            groups[key] = []
            first[key] = len(rows)
            rows.append(key)
        groups[key].append(task[1])
    out = []
    for row in rows:
        if isinstance(row, dict):
            out.append(row)
            continue
        tasks = groups[row]
        template = next(j for j in jobs if _task(j) == (row[0], tasks[0]))
        job_id = template["id"] if len(tasks) == 1 else f"{row[0]}_[{compress(tasks)}]"
        out.append({**template, "id": job_id})
    return out


def summary(jobs: Sequence[Job]) -> str:
    """``10000 jobs: 9990 PD, 10 R`` (the most common state first)."""
    counts = Counter(j["state_code"] for j in jobs)
    by_state = ", ".join(f"{n} {code}" for code, n in counts.most_common())
    return f"{len(jobs)} job{'s' if len(jobs) != 1 else ''}" + (f": {by_state}" if jobs else "")


DEFAULT_COLUMNS = "iujtMbDR"
RIGHT = ("JOBID", "TIME", "GPUS", "NODES")


SHRINK = {"NAME": 8, "RESERVATION": 8, "USER": 8}  # cut first, down to this width
LAST_MIN = 16  # NODELIST(REASON) keeps at least this much


def default_rows(
    jobs: Iterable[Job], now: float, width: int = 0
) -> tuple[list[str], list[list[str]]]:
    """gqueue's usual columns: JOBID USER NAME ST TIME GPUS NODES NODELIST(REASON), and
    RESERVATION before the last when some job shown runs in one ("-" for the others). With
    ``width`` (the terminal's), the table is cut to fit (``fit``)."""
    jobs = list(jobs)
    columns = DEFAULT_COLUMNS
    if any(j.get("reservation") for j in jobs):
        columns = columns[:-1] + "v" + columns[-1]
    letters = [GPUS if c == "b" else LETTERS[c] for c in columns]
    rows = [
        [
            shown(x.value(j, now))[:20]
            if x.header == "NAME"
            else shown(j.get("reservation") or "-")
            if x.header == "RESERVATION"
            else shown(x.value(j, now))
            for x in letters
        ]
        for j in jobs
    ]
    headers = [x.header for x in letters]
    return headers, fit(headers, rows, width) if width else rows


def fit(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[list[str]]:
    """``rows`` cut so the table (one space between columns) is at most ``width`` wide:
    the ``SHRINK`` columns first, down to their minimum, then the last column, down to
    ``LAST_MIN``; a cut cell ends with ``+``. Wider than that, the rows stay as they are."""
    cells = [list(r) for r in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    over = sum(widths) + len(widths) - 1 - width
    for i, h in [*((i, h) for i, h in enumerate(headers) if h in SHRINK), (len(headers) - 1, "")]:
        if over <= 0:
            break
        least = max(SHRINK.get(h, LAST_MIN), len(headers[i]))
        cut = min(over, widths[i] - least)
        if cut > 0:
            widths[i] -= cut
            over -= cut
            for r in cells:
                if len(r[i]) > widths[i]:
                    r[i] = r[i][: widths[i] - 1] + "+"
    return cells


def paint(header: str, cell: str) -> str:
    """Colour a state code cell (for terminals only)."""
    colour = STATE_COLOURS.get(cell.strip()) if header == "ST" else None
    return f"\x1b[{colour}m{cell}\x1b[0m" if colour else cell
