"""The ``#SBATCH`` option grammar: the options sbatch spells (short and long, with a value or
without), ``split_options``, and SLURM's value spellings (``--gres``, ``--mem``, ``--begin``,
``--export``) as rota's. Pure; every refusal is a ``ScriptError`` naming the option."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta


class ScriptError(ValueError):
    """A directive cannot be translated; the message names it and says what is allowed."""


# Short options and the long options they stand for (sbatch's spelling).
SHORT = {
    "J": "job-name",
    "t": "time",
    "N": "nodes",
    "c": "cpus-per-task",
    "o": "output",
    "e": "error",
    "a": "array",
    "d": "dependency",
    "A": "account",
    "G": "gpus",
    "H": "hold",
    "D": "chdir",
    "q": "qos",
    "n": "ntasks",
}
# Long options that take no value.
FLAGS = frozenset({"hold", "exclusive", "requeue", "no-requeue"})
VALUED = frozenset(
    {
        "job-name",
        "gres",
        "gpus",
        "gpus-per-node",
        "time",
        "nodes",
        "cpus-per-task",
        "mem",
        "output",
        "error",
        "array",
        "dependency",
        "reservation",
        "account",
        "qos",
        "begin",
        "export",
        "chdir",
        "ntasks",
        "ntasks-per-node",
    }
)
SUPPORTED = ", ".join(f"--{o}" for o in sorted(VALUED | FLAGS))


def split_options(words: list[str]) -> list[tuple[str, str | None]]:
    """``["--time=1:00", "-N", "2", "-Jname"]`` -> ``[("time", "1:00"), ("nodes", "2"), ...]``.

    Raises ScriptError naming an unknown option or one missing its value.
    """
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = words[i]
        value: str | None = None
        if word.startswith("--"):
            name, eq, inline = word[2:].partition("=")
            if eq:
                value = inline
        elif word.startswith("-") and len(word) > 1:
            letter = word[1]
            if letter not in SHORT:
                raise ScriptError(f"unknown directive -{letter}; supported: {SUPPORTED}")
            name = SHORT[letter]
            rest = word[2:].removeprefix("=")
            if rest:
                value = rest
        else:
            raise ScriptError(f"unexpected word {word!r}; directives look like --name=value")
        shown = word.split("=", 1)[0]
        if name not in VALUED and name not in FLAGS:
            raise ScriptError(f"unknown directive {shown}; supported: {SUPPORTED}")
        if name in FLAGS:
            if value is not None:
                raise ScriptError(f"{shown} takes no value, got {value!r}")
        elif value is None:
            if i + 1 >= len(words):
                raise ScriptError(f"{shown} needs a value")
            i += 1
            value = words[i]
        out.append((name, value))
        i += 1
    return out


_GPU_COUNT = re.compile(r"^(?:(?P<type>[A-Za-z0-9_.+-]+):)?(?P<count>\d+)$")
_SLURM_MEM = re.compile(r"^(?P<num>\d+)(?P<unit>[KMGTkmgt])?[Bb]?$")
_BEGIN_OFFSET = re.compile(r"^now\+(?P<num>\d+)(?P<unit>[a-z]*)$")
_BEGIN_UNITS = {
    "": "s",
    "s": "s",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "m": "m",
    "min": "m",
    "mins": "m",
    "minute": "m",
    "minutes": "m",
    "h": "h",
    "hour": "h",
    "hours": "h",
    "d": "d",
    "day": "d",
    "days": "d",
}
_CLOCK = re.compile(r"^(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?$")


def gpu_count(option: str, value: str) -> tuple[str, int]:
    """``N`` or ``TYPE:N`` -> (type, N)."""
    m = _GPU_COUNT.match(value.strip())
    if not m:
        raise ScriptError(f"--{option}: expected N or TYPE:N, got {value!r}")
    return m.group("type") or "", int(m.group("count"))


def gres_gpus(value: str) -> tuple[str, int]:
    """``gpu``, ``gpu:N`` or ``gpu:TYPE:N`` -> (type, N); other generic resources are refused."""
    found: tuple[str, int] | None = None
    for item in value.split(","):
        kind, _, rest = item.strip().partition(":")
        if kind != "gpu":
            raise ScriptError(f"--gres: only gpu is supported (gpu:N or gpu:TYPE:N), got {item!r}")
        found = gpu_count("gres", rest or "1")
    assert found is not None
    return found


def slurm_memory(value: str) -> str:
    """SLURM's ``--mem`` (default unit MB; K/M/G/T are powers of 1024) as a rota size."""
    m = _SLURM_MEM.match(value.strip())
    if not m:
        raise ScriptError(f"--mem: expected a number with an optional K, M, G or T, got {value!r}")
    if int(m.group("num")) == 0:
        raise ScriptError(
            "--mem=0 (all of a node's memory) has no rota equivalent; use --exclusive"
        )
    unit = (m.group("unit") or "M").upper()
    return f"{m.group('num')}{unit}i"


def slurm_begin(value: str, now: datetime) -> str:
    """SLURM's ``--begin`` as rota's ``begin``: ``now+N[unit]`` (bare N is seconds), an ISO
    date or time, or ``HH:MM[:SS]`` (today, or tomorrow once that time has passed)."""
    text = value.strip().lower()
    m = _BEGIN_OFFSET.match(text)
    if m:
        if m.group("unit") not in _BEGIN_UNITS:
            raise ScriptError(f"--begin: unknown unit {m.group('unit')!r} in {value!r}")
        return f"now+{m.group('num')}{_BEGIN_UNITS[m.group('unit')]}"
    if text == "now":
        return "now"
    m = _CLOCK.match(text)
    if m:
        at = now.replace(
            hour=int(m.group("h")), minute=int(m.group("m")), second=int(m.group("s") or 0)
        )
        at = at.replace(microsecond=0)
        if at <= now:
            at += timedelta(days=1)
        return at.isoformat()
    try:
        datetime.fromisoformat(value.strip())
    except ValueError:
        raise ScriptError(
            f"--begin: expected now+N[seconds|minutes|hours|days], YYYY-MM-DD[THH:MM[:SS]] or "
            f"HH:MM[:SS], got {value!r}"
        ) from None
    return value.strip()


def slurm_export(value: str, environ: Mapping[str, str]) -> dict[str, str]:
    """``--export``: ``NAME=value`` sets a variable, a bare ``NAME`` copies the submitting
    environment's; ``ALL`` and ``NONE`` add nothing (a container never inherits the submitting
    shell's whole environment)."""
    env: dict[str, str] = {}
    for item in value.split(","):
        item = item.strip()
        if item in ("", "ALL", "NONE", "NIL"):
            continue
        name, eq, val = item.partition("=")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            raise ScriptError(f"--export: {name!r} is not a variable name")
        if not eq:
            if name not in environ:
                raise ScriptError(f"--export: {name} is not set in the submitting environment")
            val = environ[name]
        env[name] = val
    return env


def positive(option: str, value: str) -> int:
    if not value.strip().isdigit() or int(value) < 1:
        raise ScriptError(f"--{option}: expected a whole number >= 1, got {value!r}")
    return int(value)
