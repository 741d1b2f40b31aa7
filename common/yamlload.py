"""YAML of users' files, refused before it is built when aliases would make it huge.

``load(text)`` composes the document (aliases stay shared references there, so a "billion
laughs" file stays small), counts the values it would have with every alias expanded, and
builds it only when that is at most ``MAX_VALUES``. Otherwise, and for an alias that contains
itself, it raises ``YamlTooLarge``, a ``yaml.YAMLError``.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_VALUES = 100_000  # values of one document with every alias expanded


class YamlTooLarge(yaml.YAMLError):
    """The document would be too large (or endless) once its aliases are expanded."""


def load(text: str, max_values: int = MAX_VALUES) -> Any:
    """The one document of ``text`` (``yaml.safe_load``'s types); YamlTooLarge when its
    aliases would expand it beyond ``max_values`` values, before anything is built."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = expanded_size(node, max_values)
        if size > max_values:
            raise YamlTooLarge(
                f"its aliases (*name) expand it to more than {max_values:,} values; "
                "write the values out or use fewer aliases"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def expanded_size(root: yaml.Node, cap: int) -> int:
    """How many values the composed ``root`` has with every alias expanded (at most ``cap``
    + 1: counting stops there); each shared node is counted once per use but visited once.
    YamlTooLarge for a node that contains itself."""
    sizes: dict[int, int] = {}
    entered: set[int] = set()  # on the current path: reaching one again is a cycle
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            sizes[key] = min(cap + 1, 1 + sum(sizes[id(c)] for c in _children(node)))
            entered.discard(key)
            continue
        if key in sizes:
            continue
        if key in entered:
            raise YamlTooLarge("an alias (*name) refers to a value that contains it")
        entered.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)]
