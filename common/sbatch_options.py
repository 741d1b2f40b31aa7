"""The ``#SBATCH`` option grammar: the options sbatch spells (short and long, with a value or
without), ``split_options``, and SLURM's value spellings (``--gres``, ``--mem``, ``--begin``,
``--export``) as rota's. Pure; every refusal is a ``ScriptError`` naming the option."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta

from rota.sbatch_catalog import ALIASES, FLAGS, KNOWN, OPTIONAL, SHORT


class ScriptError(ValueError):
    """A directive cannot be translated; the message names it and says what is allowed."""


Option = tuple[str, str | None]


def takes_value(name: str) -> bool:
    """Whether an option needs a value (given inline or as the next word)."""
    return name not in FLAGS and name not in OPTIONAL


def long_name(word: str) -> str | None:
    """The long name of an option word (``-J``, ``-Jx``, ``--job-name=x``, ``--job`` ->
    ``job-name``); None when it is not an option sbatch knows."""
    if word.startswith("--"):
        name = word[2:].split("=", 1)[0]
        name = ALIASES.get(name, name)
        return name if name in KNOWN else _unique_prefix(name)
    if word.startswith("-") and len(word) > 1:
        return SHORT.get(word[1])
    return None


def split_options(words: list[str]) -> tuple[list[Option], list[str]]:
    """``["--time=1:00", "-N", "2", "-Jname"]`` -> ``[("time", "1:00"), ("nodes", "2"), ...]``
    and the problems found (an unknown option, a missing value), each naming the option. An
    unknown option is skipped with the word after it when that does not look like an option."""
    out: list[Option] = []
    problems: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        value: str | None = None
        if word.startswith("--"):
            name, eq, inline = word[2:].partition("=")
            name = ALIASES.get(name, name)
            if name not in KNOWN:
                name = _unique_prefix(name) or name
            if eq:
                value = inline
        elif word.startswith("-") and len(word) > 1:
            name = SHORT.get(word[1], "")
            rest = word[2:].removeprefix("=")
            if rest:
                value = rest
        else:
            problems.append(f"unexpected word {word!r}; directives look like --name=value")
            continue
        shown = word.split("=", 1)[0] if word.startswith("--") else word[:2]
        if name not in KNOWN:
            problems.append(f"unknown directive {shown}")
            if value is None and i < len(words) and not words[i].startswith("-"):
                i += 1
            continue
        if name in FLAGS:
            if value is not None:
                problems.append(f"{shown} takes no value, got {value!r}")
                continue
        elif value is None and name not in OPTIONAL:
            if i >= len(words):
                problems.append(f"{shown} needs a value")
                continue
            value = words[i]
            i += 1
        out.append((name, value))
    return out, problems


def _unique_prefix(name: str) -> str | None:
    """As sbatch's getopt_long: an abbreviation of exactly one long option stands for it
    (``--err`` is ``--error``); None when it abbreviates none or several."""
    if not name:
        return None
    found = {ALIASES.get(k, k) for k in (*KNOWN, *ALIASES) if k.startswith(name)}
    return found.pop() if len(found) == 1 else None


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


def gres_gpus(value: str) -> tuple[tuple[str, int] | None, list[str]]:
    """``gpu``, ``gpu:N`` or ``gpu:TYPE:N`` -> (type, N), None without a gpu item, and the
    other generic resources named (``lscratch:10`` -> ``lscratch``), which rota does not
    have."""
    found: tuple[str, int] | None = None
    others: list[str] = []
    for item in value.split(","):
        kind, _, rest = item.strip().partition(":")
        if kind == "gpu":
            found = gpu_count("gres", rest or "1")
        elif kind:
            others.append(kind)
    return found, others


def memory_amount(option: str, value: str) -> tuple[int, str]:
    """SLURM's ``--mem``/``--mem-per-cpu``/``--mem-per-gpu`` value as (number, unit): the
    default unit is M, and K/M/G/T are powers of 1024. 0 means "no limit" (the caller says so)."""
    m = _SLURM_MEM.match(value.strip())
    if not m:
        raise ScriptError(
            f"--{option}: expected a number with an optional K, M, G or T, got {value!r}"
        )
    return int(m.group("num")), (m.group("unit") or "M").upper()


def rota_size(number: int, unit: str) -> str:
    """(16000, "M") -> ``16000Mi``."""
    return f"{number}{unit}i"


def slurm_memory(value: str) -> str:
    """SLURM's ``--mem`` as a rota size (``32G`` -> ``32Gi``, ``16000`` -> ``16000Mi``)."""
    return rota_size(*memory_amount("mem", value))


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
