"""The job file's ``signal`` (SLURM's ``--signal=[B:]SIG@SECONDS``): which signal warns a job,
and how many seconds before its time limit.

Pure and shared: the scheduler validates it, the agent delivers it.
"""

from __future__ import annotations

import signal as _signals

MAX_WARN_SECONDS = 65535  # SLURM's limit
SIGNAL_HELP = "[B:]SIG@SECONDS, e.g. USR1@120 (SIG a name such as USR1 or TERM, or a number)"


def parse_signal(text: str) -> tuple[str, int]:
    """(signal name without ``SIG``, seconds before the time limit) of ``[B:]SIG[@SECONDS]``;
    SECONDS defaults to 60 as in SLURM. ValueError names what is wrong. ``B:`` (the batch
    shell only) is accepted: a job's container runs its batch shell as the main process."""
    body = text.strip()
    if body.startswith("B:"):
        body = body[2:]
    name, _, seconds = body.partition("@")
    name = name.strip().upper()
    if name.isdigit():
        try:
            name = _signals.Signals(int(name)).name
        except ValueError:
            raise ValueError(f"no signal number {name}") from None
    name = name.removeprefix("SIG")
    if not name or f"SIG{name}" not in _signals.Signals.__members__:
        raise ValueError(f"unknown signal {name or text!r}")
    if name in ("KILL", "STOP"):
        raise ValueError(f"SIG{name} cannot be caught: it warns nothing")
    try:
        warn = int(seconds) if seconds else 60
    except ValueError:
        raise ValueError(f"seconds must be an integer, got {seconds!r}") from None
    if not 0 <= warn <= MAX_WARN_SECONDS:
        raise ValueError(f"seconds must be 0 to {MAX_WARN_SECONDS}, got {warn}")
    return name, warn


def canonical_signal(text: str) -> str:
    """``text`` as ``NAME@SECONDS`` (``""`` stays ``""``); ValueError as ``parse_signal``."""
    if not text:
        return ""
    name, warn = parse_signal(text)
    return f"{name}@{warn}"
