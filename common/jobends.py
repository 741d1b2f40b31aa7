"""Job-end notifications and output-file patterns: the rules the CLI, the scheduler and the
agent share (pure; no I/O).

A webhook is posted when a job ends in a way its ``notify.on`` names: ``end`` (COMPLETED),
``fail`` (FAILED, OUT_OF_MEMORY, NODE_FAIL), ``timeout`` (TIMEOUT), ``cancel`` (CANCELLED,
PREEMPTED). The default is all four: every end.

Output patterns follow sbatch's ``--output``/``--error``: ``%j`` job id (``123`` or ``123_4``),
``%A`` array job id (the job id when not an array), ``%a`` array task id (empty when not an
array), ``%x`` job name, ``%u`` user, ``%N`` node, ``%%`` a percent sign. A relative pattern is
relative to the job's ``workdir``; the file must lie inside a writable mount of the job, which is
where the agent writes it (on the node, through the mount's source).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from rota.states import JobState

if TYPE_CHECKING:
    from rota.jobspec import Mount

NOTIFY_EVENTS = ("end", "fail", "timeout", "cancel")
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
PATTERN_LETTERS = "jAaxuN%"
_PATTERN = re.compile(r"%(.?)")


def end_event(state: JobState) -> str:
    """The ``notify.on`` name of a terminal state."""
    return _ENDS[state]


def notice_wanted(url: str, on: Sequence[str], state: JobState) -> bool:
    """True when a job with ``notify`` (url, on) that ended in ``state`` gets a webhook."""
    return bool(url) and state in _ENDS and (not on or _ENDS[state] in on)


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
    for letter in _PATTERN.findall(pattern):
        if letter not in PATTERN_LETTERS:
            shown = f"%{letter}" if letter else "a lone % at the end"
            return f"unknown pattern {shown}; allowed: %j %A %a %x %u %N %%"
    return ""


def expand(pattern: str, fields: Mapping[str, str]) -> str:
    """``pattern`` with each ``%X`` replaced by ``fields[X]`` (``%%`` is ``%``); a character
    a placeholder gives that could move the path (``/``, NUL) becomes ``_``."""

    def one(m: re.Match[str]) -> str:
        letter = m.group(1)
        if letter == "%":
            return "%"
        value = fields.get(letter, "")
        return value.replace("/", "_").replace("\x00", "_")

    return _PATTERN.sub(one, pattern)


def container_path(pattern: str, workdir: str) -> str:
    """The absolute path in the container a pattern names (relative ones under ``workdir``)."""
    path = pattern if pattern.startswith("/") else posixpath.join(workdir or "/", pattern)
    return posixpath.normpath(path)


def writable_mount(path: str, mounts: Sequence[Mount]) -> tuple[Mount, str] | None:
    """The writable mount holding container ``path`` (the innermost), and the path inside it."""
    best: tuple[Mount, str] | None = None
    for mount in mounts:
        target = mount.target.rstrip("/") or "/"
        if path == target or path.startswith(target.rstrip("/") + "/"):
            rest = posixpath.relpath(path, target)
            if best is None or len(target) > len(best[0].target.rstrip("/") or "/"):
                best = (mount, rest)
    if best is None or best[0].read_only or best[1] in (".", ""):
        return None
    return best


def placement_problem(pattern: str, workdir: str, mounts: Sequence[Mount]) -> str:
    """Why the agent could not write the file ``pattern`` names ("" when it can)."""
    if not pattern.startswith("/") and not workdir:
        return "a relative path needs the job's workdir (gsub --chdir, #SBATCH -D)"
    path = container_path(pattern, workdir)
    if ".." in pattern.split("/"):
        return "must not contain '..'"
    if writable_mount(path, mounts) is None:
        return (
            f"{path} is not inside a writable mount of the job; the agent writes output "
            "files on the node through the job's mounts (add one, e.g. #ROTA mount=SRC:DST)"
        )
    return ""
