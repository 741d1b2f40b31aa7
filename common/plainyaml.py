"""The YAML the commands read on every start that needs no YAML parser: plain text YAML reads
back unchanged (an image, a path, ``host:port``) and flat files of ``key: value`` lines (the
config file). Anything else returns None and is left to PyYAML, which costs ~10 ms to import,
so the answers are always PyYAML's own.
"""

from __future__ import annotations

import re
from typing import Any

# Starts with a letter, "_" or "/", and holds no character YAML gives a meaning to (a colon
# only between other characters): PyYAML resolves such text to a string, unless it is one of
# the words below in some case (yes/no/on/off/true/false are booleans, null is null).
_PLAIN = re.compile(r"(?:[^\W\d]|/)[\w./@+-]*(?::[\w./@+-]+)*")
_WORDS = frozenset({"yes", "no", "on", "off", "true", "false", "null"})
_LINE = re.compile(r"([A-Za-z_][\w-]*): +(\S+) *")
_BOOLEANS = {"true": True, "false": False}


def plain_text(text: str) -> str | None:
    """``text`` (stripped) when YAML would read it as that same string, else None."""
    text = text.strip()
    if _PLAIN.fullmatch(text) and text.lower() not in _WORDS:
        return text
    return None


def flat_mapping(text: str) -> dict[str, Any] | None:
    """The mapping of a file of ``key: value`` lines (blank and ``#`` lines allowed), each value
    plain text or ``true``/``false``, as YAML reads it; None for any other file."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = _LINE.fullmatch(line)
        if found is None:
            return None
        key, raw = found.groups()
        if key.lower() in _WORDS:  # a key YAML reads as a boolean or null
            return None
        value = _BOOLEANS.get(raw, plain_text(raw))
        if value is None:
            return None
        out[key] = value
    return out
