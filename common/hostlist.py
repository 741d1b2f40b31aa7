"""SLURM's compressed host lists: ``gpu[01-03,07],cpu1`` for gpu01 gpu02 gpu03 gpu07 cpu1.

``compress(names)`` writes the form ``SLURM_JOB_NODELIST`` carries (names sharing a prefix and
numeric suffix of the same width fold into one bracket, in the order given); ``expand(text)``
reads it back, as ``scontrol show hostnames`` does, and raises ValueError on a malformed list.
``expand(compress(names)) == names`` for names in the order ``compress`` keeps (prefix groups in
order of first appearance, numbers ascending within a group; duplicates dropped).
"""

from __future__ import annotations

import re

_NUMBERED = re.compile(r"^(.*?)(\d+)$")
MAX_EXPANDED = 65536  # a bound on what one list may name, so ``n[0-999999999]`` is refused


def compress(names: list[str]) -> str:
    """The compressed form of ``names`` (``[]`` -> ``""``)."""
    groups: dict[tuple[str, int], list[int]] = {}
    order: list[tuple[str, int] | str] = []
    for name in dict.fromkeys(names):
        m = _NUMBERED.match(name)
        if m is None or "[" in name or "," in name:
            order.append(name)
            continue
        key = (m.group(1), len(m.group(2)))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(m.group(2)))
    parts = []
    for item in order:
        if isinstance(item, str):
            parts.append(item)
            continue
        prefix, width = item
        numbers = sorted(groups[item])
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0]:0{width}d}")
        else:
            parts.append(f"{prefix}[{_ranges(numbers, width)}]")
    return ",".join(parts)


def _ranges(numbers: list[int], width: int) -> str:
    out = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
        if n is not None:
            start = prev = n
    return ",".join(out)


def expand(text: str) -> list[str]:
    """The host names of a compressed list, in order; ValueError naming what is malformed."""
    names: list[str] = []
    for part in _top_level_parts(text):
        if "[" not in part:
            if "]" in part:
                raise ValueError(f"unbalanced ']' in {part!r}")
            names.append(part)
            continue
        prefix, _, rest = part.partition("[")
        inner, closed, suffix = rest.partition("]")
        if not closed or "[" in inner or "[" in suffix or "]" in suffix:
            raise ValueError(f"malformed brackets in {part!r}")
        for piece in inner.split(","):
            low, dash, high = piece.partition("-")
            if not low.isdigit() or (dash and not high.isdigit()):
                raise ValueError(f"{piece!r} in {part!r} is not a number or range like 01-04")
            first, last = int(low), int(high) if dash else int(low)
            if last < first:
                raise ValueError(f"range {piece!r} in {part!r} runs backwards")
            if len(names) + last - first + 1 > MAX_EXPANDED:
                raise ValueError(f"names more than {MAX_EXPANDED} hosts")
            names.extend(f"{prefix}{n:0{len(low)}d}{suffix}" for n in range(first, last + 1))
    return names


def _top_level_parts(text: str) -> list[str]:
    """``text`` split at the commas outside brackets; empty parts dropped."""
    parts, depth, current = [], 0, ""
    for char in text.strip():
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth < 0 or depth > 1:
            raise ValueError(f"unbalanced brackets in {text!r}")
        current += char
    if depth:
        raise ValueError(f"unclosed '[' in {text!r}")
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]
