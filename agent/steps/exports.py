"""Reading a shell's ``export -p`` (pure): ``export A='x'`` (dash, busybox ash), ``declare -x
A="x"`` and ``A=$'x\\ny'`` (bash, also as ``sh``). Only assignments are kept; a word that is
not one (``export``, ``declare``, ``-x``, a name declared without a value) is skipped.
"""

from __future__ import annotations

import re

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "e": "\x1b",
    "E": "\x1b",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def exported(text: str) -> dict[str, str]:
    """The assignments of an ``export -p`` text, in order (a later one wins)."""
    env: dict[str, str] = {}
    for word in _words(text):
        name, eq, value = word.partition("=")
        if eq and _NAME.match(name):
            env[name] = value
    return env


def _words(text: str) -> list[str]:
    """Shell words with their quotes removed: '...', "...", $'...' and backslashes."""
    words: list[str] = []
    word: list[str] = []
    started = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\n;":
            if started:
                words.append("".join(word))
                word, started = [], False
            i += 1
            continue
        started = True
        if c == "'":
            end = text.find("'", i + 1)
            end = n if end < 0 else end
            word.append(text[i + 1 : end])
            i = end + 1
        elif c == "$" and text.startswith("$'", i):
            i = _ansi_c(text, i + 2, word)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '\\"$`\n':
                    if text[i + 1] != "\n":
                        word.append(text[i + 1])
                    i += 2
                    continue
                word.append(text[i])
                i += 1
            i += 1
        elif c == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                word.append(text[i + 1])
            i += 2
        else:
            word.append(c)
            i += 1
    if started:
        words.append("".join(word))
    return words


def _ansi_c(text: str, i: int, word: list[str]) -> int:
    """Read a $'...' body from ``i`` into ``word``; the index after its closing quote."""
    n = len(text)
    while i < n and text[i] != "'":
        if text[i] != "\\" or i + 1 >= n:
            word.append(text[i])
            i += 1
            continue
        c = text[i + 1]
        if c in _C_ESCAPES:
            word.append(_C_ESCAPES[c])
            i += 2
        elif c == "x":
            digits = re.match(r"[0-9A-Fa-f]{1,2}", text[i + 2 : i + 4])
            word.append(chr(int(digits.group(), 16)) if digits else "\\x")
            i += 2 + (len(digits.group()) if digits else 0)
        elif c in "01234567":
            digits = re.match(r"[0-7]{1,3}", text[i + 1 : i + 4])
            assert digits is not None
            word.append(chr(int(digits.group(), 8)))
            i += 1 + len(digits.group())
        else:
            word.append("\\" + c)
            i += 2
    return i + 1
