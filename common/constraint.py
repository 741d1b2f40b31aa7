"""SLURM's node-feature constraint (``sbatch -C``): parsing, checking and matching.

Syntax: feature names (letters, digits, ``_ . -``, starting alphanumeric, at most
``MAX_FEATURE`` characters), ``&`` (AND), ``|`` (OR; each node may satisfy a different
alternative), parentheses for grouping and one ``[a|b|c]`` group (matching OR: all the job's
nodes satisfy the SAME alternative). ``&`` binds tighter than ``|``; spaces are ignored.
An expression has at most ``MAX_CONSTRAINT`` characters, ``MAX_TERMS`` feature names and
``MAX_DEPTH`` nested groups.

Counts, as SLURM's: ``a*2`` (at least 2 of the job's nodes have ``a``), and the multiple counts
of one ``[...]`` group, ``[a*2&(b|c)*1]`` (2 of the job's nodes have ``a`` and another has
``b`` or ``c``; every term of the group has a count). Either may be ANDed with plain terms,
which every node needs (``ib&[a*2&b*2]``). Counts go nowhere else (not inside ``|`` or
parentheses, not beside a matching OR), each is at least 1, and a job needs at least as many
nodes as its counts add up to (``check_counts``): its other nodes need only the plain terms.

A node has a feature when one of its labels is that name with the value ``true``, or when its
``features`` label lists the name (separated by commas or spaces: ``--labels`` flags split
at commas, so ``--labels "features=a100 ib"``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_CONSTRAINT = 1024
MAX_FEATURE = 63
MAX_TERMS = 64
MAX_DEPTH = 8
FEATURES_LABEL = "features"
SYNTAX = "feature names joined by & (and), | (or), ( ) and one [a|b] (matching or), e.g. a&(b|c)"
_SEPARATORS = re.compile(r"[,\s]+")
_TOKEN = re.compile(r"\s*(?:([A-Za-z0-9][A-Za-z0-9_.-]*)|(\*\s*[0-9]+)|([&|()\[\]]))")
MAX_COUNT = 100_000
COUNTS = (
    "counts go on a feature alone (a*2) or on each &-joined term of one [...] group ([a*2&b*1])"
)

# A tree: ("f", name) | ("and", children) | ("or", children) | ("match", alternatives)
# | ("count", (tree, n)) while parsing
Tree = tuple[str, Any]
Count = tuple[Tree, int]  # a term and how many of the job's nodes must satisfy it


class ConstraintError(ValueError):
    """The expression is not valid; the message says where and what is allowed."""


@dataclass(frozen=True, slots=True)
class Constraint:
    """A parsed expression; ``text`` is the normalised form (no spaces). ``tree`` is what
    every node of the job needs; ``counts`` the terms that only so many of them need."""

    text: str
    tree: Tree
    counts: tuple[Count, ...] = ()

    @property
    def counted(self) -> int:
        """How many of the job's nodes its counts ask for (0: it has none)."""
        return sum(n for _, n in self.counts)

    def count_mask(self, features: frozenset[str]) -> int:
        """Which ``counts`` a node with ``features`` satisfies: bit ``i`` for the i-th."""
        mask = 0
        for i, (term, _) in enumerate(self.counts):
            if _eval(term, features):
                mask |= 1 << i
        return mask

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a node with these labels satisfies the expression (a matching-OR group
        as a plain OR: which alternative the job's other nodes took is ``variants``' concern)."""
        return self.satisfied_by(node_features(labels))

    def satisfied_by(self, features: frozenset[str]) -> bool:
        """``matches`` for a node whose features (``node_features``) are known already."""
        return _eval(self.tree, features)

    def variant_mask(self, features: frozenset[str]) -> int:
        """Which ``variants()`` a node with ``features`` satisfies: bit ``i`` for the i-th.
        Costs one pass over the expression, not one per alternative (a policy asks it of
        every node for every pending job)."""
        alternatives = _find_match(self.tree)
        if not alternatives:
            return int(_eval(self.tree, features))
        # variant i is the tree with the group replaced by alternative i: the tree evaluated
        # with the group taken as that alternative's value
        when = (_eval(self.tree, features, False), _eval(self.tree, features, True))
        if when[0] == when[1]:
            return (1 << len(alternatives)) - 1 if when[0] else 0
        mask = 0
        for i, alternative in enumerate(alternatives):
            if when[_eval(alternative, features)]:
                mask |= 1 << i
        return mask

    @property
    def matching(self) -> bool:
        """Whether it has a ``[...]`` group (all nodes must take the same alternative)."""
        return bool(_find_match(self.tree))

    def variants(self) -> tuple[Constraint, ...]:
        """One expression per alternative of the ``[...]`` group, in order (the group
        replaced by that alternative); ``(self,)`` without a group. A set of nodes that all
        satisfy one variant satisfies the matching OR."""
        if not self.matching:
            return (self,)
        trees = (_replace(self.tree, alt) for alt in _find_match(self.tree))
        return tuple(Constraint(_render(tree), tree) for tree in trees)


def node_features(labels: Mapping[str, str]) -> frozenset[str]:
    """The features a node's labels give it: keys labelled ``true``, and the names its
    ``features`` label lists (commas or spaces between them)."""
    names = {k for k, v in labels.items() if v == "true"}
    listed = labels.get(FEATURES_LABEL, "")
    if listed:
        names.update(n for n in _SEPARATORS.split(listed) if n)
    return frozenset(names)


def parse_constraint(text: str) -> Constraint:
    """The parsed expression; ConstraintError naming the problem and the allowed syntax."""
    if len(text) > MAX_CONSTRAINT:
        raise ConstraintError(f"{len(text)} characters; at most {MAX_CONSTRAINT} are allowed")
    tokens = _tokens(text)
    if not tokens:
        raise ConstraintError(f"is empty; expected {SYNTAX}")
    parser = _Parser(tokens)
    tree = parser.expr(0)
    if parser.pos != len(tokens):
        raise ConstraintError(f"unexpected {tokens[parser.pos]!r}; expected {SYNTAX}")
    text = "".join(tokens)
    if not parser.counts:
        return Constraint(text, tree)
    base, counts = _split_counts(tree)
    return Constraint(text, base, counts)


def check_counts(constraint: Constraint, nodes: int) -> str:
    """Why a job of ``nodes`` nodes cannot have ``constraint``'s counts ("" when it can)."""
    if constraint.counted > nodes:
        return (
            f"{constraint.text}: its counts ask for {constraint.counted} node(s) but the job "
            f"has {nodes} (nodes); give -N {constraint.counted} or more"
        )
    return ""


def _split_counts(tree: Tree) -> tuple[Tree, tuple[Count, ...]]:
    """(what every node needs, the counted terms) of a tree with counts, as SLURM places
    them: the tree or the terms of a top-level AND are counted terms, plain terms, or one
    ``[...]`` group whose &-joined terms all have counts."""
    kind, body = tree
    parts = body if kind == "and" else (tree,)
    plain: list[Tree] = []
    counts: list[Count] = []
    for part in parts:
        if part[0] == "count":
            counts.append(part[1])
        elif part[0] == "match" and _has_count(part):
            if len(part[1]) != 1:
                raise ConstraintError(f"a [...] group with counts has no |; {COUNTS}")
            inner = part[1][0]
            terms = inner[1] if inner[0] == "and" else (inner,)
            if any(t[0] != "count" for t in terms):
                raise ConstraintError(
                    f"every &-joined term of a [...] group needs a count; {COUNTS}"
                )
            counts.extend(t[1] for t in terms)
        elif _has_count(part):
            raise ConstraintError(f"a count inside | or parentheses; {COUNTS}")
        else:
            plain.append(part)
    if any(_find_match(p) for p in plain):
        raise ConstraintError(f"counts cannot be combined with a matching OR [a|b]; {COUNTS}")
    if any(_has_count(term) for term, _ in counts):
        raise ConstraintError(f"a count inside a counted term; {COUNTS}")
    base: Tree = plain[0] if len(plain) == 1 else ("and", tuple(plain))
    return base, tuple(counts)


def _has_count(tree: Tree) -> bool:
    kind, body = tree
    if kind == "count":
        return True
    if kind == "f":
        return False
    return any(_has_count(c) for c in body)


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:
            bad = text[pos:].lstrip()[:1]
            hint = "; a count is * and a number (a*2)" if bad == "*" else ""
            raise ConstraintError(f"unexpected {bad!r}{hint}; expected {SYNTAX}")
        name = m.group(1)
        if name is not None and len(name) > MAX_FEATURE:
            raise ConstraintError(
                f"feature name {name[:20]}... is {len(name)} characters; at most {MAX_FEATURE}"
            )
        count = m.group(2)
        if count is not None:
            count = "*" + count[1:].strip()
            if not 1 <= int(count[1:]) <= MAX_COUNT:
                raise ConstraintError(f"count {count}: a count is 1 to {MAX_COUNT} nodes")
        tokens.append(name or count or m.group(3))
        pos = m.end()
    if sum(t[0].isalnum() for t in tokens) > MAX_TERMS:
        raise ConstraintError(f"more than {MAX_TERMS} feature names")
    return tokens


class _Parser:
    """Recursive descent: expr := conj ('|' conj)*; conj := atom ('&' atom)*;
    atom := NAME | '(' expr ')' | '[' expr ']'."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.groups = 0  # [...] seen
        self.counts = 0  # counts seen

    def _peek(self) -> str:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ""

    def _join(self, op: str, depth: int, part: str) -> Tree:
        items = [self.atom(depth) if part == "atom" else self.conj(depth)]
        while self._peek() == op:
            self.pos += 1
            items.append(self.atom(depth) if part == "atom" else self.conj(depth))
        return items[0] if len(items) == 1 else ("and" if op == "&" else "or", tuple(items))

    def expr(self, depth: int) -> Tree:
        return self._join("|", depth, "conj")

    def conj(self, depth: int) -> Tree:
        return self._join("&", depth, "atom")

    def atom(self, depth: int) -> Tree:
        tok = self._peek()
        if not tok:
            raise ConstraintError(f"ends too early; expected {SYNTAX}")
        self.pos += 1
        if tok[0].isalnum():
            return self._counted(("f", tok))
        if tok not in "([":
            raise ConstraintError(f"unexpected {tok!r}; expected {SYNTAX}")
        if depth >= MAX_DEPTH:
            raise ConstraintError(f"more than {MAX_DEPTH} nested groups")
        if tok == "[":
            if depth or self.groups:
                raise ConstraintError("only one [...] group is allowed, and not inside another")
            self.groups += 1
        inner = self.expr(depth + 1)
        close = ")" if tok == "(" else "]"
        if self._peek() != close:
            raise ConstraintError(f"missing {close!r}; expected {SYNTAX}")
        self.pos += 1
        if tok == "[":
            alternatives = inner[1] if inner[0] == "or" else (inner,)
            return ("match", alternatives)
        return self._counted(inner)

    def _counted(self, tree: Tree) -> Tree:
        """``tree``, with the count that follows it (``*N``) when there is one."""
        tok = self._peek()
        if not tok.startswith("*"):
            return tree
        self.pos += 1
        self.counts += 1
        return ("count", (tree, int(tok[1:])))


def _eval(tree: Tree, features: frozenset[str], group: bool | None = None) -> bool:
    """Whether ``features`` satisfy ``tree``; the ``[...]`` group as a plain OR, or taken as
    ``group`` when that is given."""
    kind, body = tree
    if kind == "f":
        return body in features
    if kind == "match" and group is not None:
        return group
    children: tuple[Tree, ...] = body
    if kind == "and":
        return all(_eval(c, features, group) for c in children)
    return any(_eval(c, features, group) for c in children)  # "or", "match"


def _find_match(tree: Tree) -> tuple[Tree, ...]:
    kind, body = tree
    if kind == "match":
        return body
    if kind == "f":
        return ()
    for child in body:
        found = _find_match(child)
        if found:
            return found
    return ()


def _render(tree: Tree) -> str:
    """The text of a tree, with parentheses where an OR sits inside an AND."""
    kind, body = tree
    if kind == "f":
        return str(body)
    if kind == "match":
        return "[" + "|".join(map(_render, body)) + "]"
    if kind == "or":
        return "|".join(map(_render, body))
    return "&".join(f"({_render(c)})" if c[0] == "or" else _render(c) for c in body)


def _replace(tree: Tree, alternative: Tree) -> Tree:
    kind, body = tree
    if kind == "match":
        return alternative
    if kind == "f":
        return tree
    return (kind, tuple(_replace(c, alternative) for c in body))
