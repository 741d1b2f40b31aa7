"""Job-end notifications and output-file patterns: the rules the CLI, the scheduler and the
agent share (pure; no I/O).

A webhook is posted when a job ends in a way its ``notify.on`` names: ``end`` (COMPLETED),
``fail`` (FAILED, OUT_OF_MEMORY, NODE_FAIL), ``timeout`` (TIMEOUT), ``cancel`` (CANCELLED,
PREEMPTED); ``idle`` names the idle rules' webhooks (``idle_warning``, then ``idle_end``: the
session ended, the batch job cancelled or requeued). The default is all five.

Output patterns follow sbatch's ``--output``/``--error``: ``%j`` job id (``123`` or ``123_4``),
``%A`` array job id (the job id when not an array), ``%a`` array task id (empty when not an
array), ``%x`` job name, ``%u`` user, ``%N`` node, ``%%`` a percent sign. The scheduler takes
absolute host paths only (``gsub`` makes a relative one absolute from the directory it runs in, as
sbatch does) under its ``allowed_mounts``; the agent of the job's first node writes the file there,
on the node (a shared file system makes it visible where the job was submitted), after checking
its own ``allowed_mounts`` with symbolic links resolved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from rota.states import JobState

NOTIFY_EVENTS = ("end", "fail", "timeout", "cancel", "idle")
IDLE_EVENTS = ("idle_warning", "idle_end")  # the ``event`` of the idle rules' webhooks
MAX_URL = 2048
_ENDS: dict[JobState, str] = {
    JobState.COMPLETED: "end",
    JobState.FAILED: "fail",
    JobState.OUT_OF_MEMORY: "fail",
    JobState.NODE_FAIL: "fail",
    JobState.TIMEOUT: "timeout",
    JobState.CANCELLED: "cancel",
    JobState.PREEMPTED: "cancel",
}
PATTERN_LETTERS = "jJAaxuNnst%"
# %[WIDTH]LETTER: a width zero-pads a number, as SLURM's file names do (%4j -> 0042)
_PATTERN = re.compile(r"%(\d{0,2})(.?)")


def end_event(state: JobState) -> str:
    """The ``notify.on`` name of a terminal state."""
    return _ENDS[state]


def notice_wanted(url: str, on: Sequence[str], state: JobState) -> bool:
    """True when a job with ``notify`` (url, on) that ended in ``state`` gets a webhook."""
    return bool(url) and state in _ENDS and (not on or _ENDS[state] in on)


def idle_notice_wanted(url: str, on: Sequence[str]) -> bool:
    """True when a job with ``notify`` (url, on) gets the idle rules' webhooks."""
    return bool(url) and (not on or "idle" in on)


def url_problem(url: str) -> str:
    """Why ``url`` cannot be a webhook address ("" when it can)."""
    if len(url) > MAX_URL:
        return f"at most {MAX_URL} characters"
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        return "must not contain spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        return f"not a URL: {exc}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"expected an http:// or https:// URL with a host, got {url[:80]!r}"
    if parts.username or parts.password:
        return "must not carry a user name or password (put a token in the path or query)"
    return ""


def pattern_problem(pattern: str) -> str:
    """Why ``pattern`` is not an output pattern ("" when it is)."""
    for width, letter in _PATTERN.findall(pattern):
        if letter not in PATTERN_LETTERS or (width and letter == "%"):
            shown = f"%{width}{letter}" if letter else "a lone % at the end"
            return f"unknown pattern {shown}; allowed: %j %J %A %a %x %u %N %n %s %t %%"
    return ""


def expand(pattern: str, fields: Mapping[str, str]) -> str:
    """``pattern`` with each ``%X`` replaced by ``fields[X]`` (``%%`` is ``%``); a character
    a placeholder gives that could move the path (``/``, NUL) becomes ``_``."""

    def one(m: re.Match[str]) -> str:
        width, letter = m.group(1), m.group(2)
        if letter == "%":
            return "%"
        value = fields.get(letter, "")
        if width and value.isdigit():
            value = value.zfill(int(width))
        return value.replace("/", "_").replace("\x00", "_")

    return _PATTERN.sub(one, pattern)
