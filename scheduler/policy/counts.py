"""Node counts of a constraint (``-C "[a*2&b*1]"``, ``a*2``): which of a job's candidate nodes
it gets so that, of them, disjoint sets of the counted sizes satisfy each counted term (a
bipartite matching of the counts' slots to nodes; a node serves one term at most, as SLURM
allocates them), the other nodes needing only what every node needs."""

from __future__ import annotations

from collections.abc import Sequence

from rota.constraint import Constraint


def pick_counted(
    constraint: Constraint, features: Sequence[frozenset[str]], nodes: int
) -> list[int] | None:
    """Indices of ``nodes`` candidates (given by their features, most preferred first) that
    meet ``constraint``'s counts, in the candidates' order; None when none do. Within the
    nodes alike (the same counted terms satisfied) the earlier are taken, and the nodes
    beyond the counts are the earliest left."""
    if len(features) < nodes or constraint.counted > nodes:
        return None
    known: dict[frozenset[str], int] = {}
    groups: dict[int, list[int]] = {}  # counted terms satisfied (a mask) -> candidates
    for c, f in enumerate(features):
        mask = known.get(f)
        if mask is None:
            mask = known[f] = constraint.count_mask(f)
        if mask:
            groups.setdefault(mask, []).append(c)
    used = _flow([n for _, n in constraint.counts], {m: len(g) for m, g in groups.items()})
    if used is None:
        return None
    chosen = {c for mask, n in used.items() for c in groups[mask][:n]}
    rest = nodes - len(chosen)
    for c in range(len(features)):
        if rest <= 0:
            break
        if c not in chosen:
            chosen.add(c)
            rest -= 1
    return sorted(chosen)


def _flow(counts: list[int], sizes: dict[int, int]) -> dict[int, int] | None:
    """How many nodes of each group (by mask) serve the counts, or None when the groups
    cannot: a maximum flow source -> term i (``counts[i]``) -> group with bit i (unbounded)
    -> sink (the group's size), by shortest augmenting paths on this small graph. The paths
    through one term and one group come first (``_direct``: what the search would take, found
    without a search each), so the searches are only for what those leave (one search per
    node counted made 64 terms on 1,000 nodes of different features a second a try)."""
    masks = list(sizes)
    terms = len(counts)
    # vertices: 0 source, 1..terms the terms, then the groups, then the sink
    sink = 1 + terms + len(masks)
    wanted = sum(counts)
    cap: dict[tuple[int, int], int] = {}
    for i, n in enumerate(counts):
        cap[(0, 1 + i)] = n
        for j, mask in enumerate(masks):
            if mask >> i & 1:
                cap[(1 + i, 1 + terms + j)] = wanted
    for j, mask in enumerate(masks):
        cap[(1 + terms + j, sink)] = sizes[mask]
    edges: dict[int, list[int]] = {}
    for a, b in list(cap):
        edges.setdefault(a, []).append(b)
        edges.setdefault(b, []).append(a)
        cap.setdefault((b, a), 0)
    total = _direct(counts, masks, cap, sink)
    while True:
        back = {0: 0}
        frontier = [0]
        while frontier and sink not in back:
            following = []
            for a in frontier:
                for b in edges.get(a, ()):
                    if b not in back and cap[(a, b)] > 0:
                        back[b] = a
                        following.append(b)
            frontier = following
        if sink not in back:
            break
        path = []
        b = sink
        while b:
            path.append((back[b], b))
            b = back[b]
        push = min(cap[e] for e in path)
        for a, b in path:
            cap[(a, b)] -= push
            cap[(b, a)] += push
        total += push
    if total < wanted:
        return None
    return {mask: cap[(sink, 1 + terms + j)] for j, mask in enumerate(masks)}


def _direct(counts: list[int], masks: list[int], cap: dict[tuple[int, int], int], sink: int) -> int:
    """Push along every path source -> term -> group -> sink, in the order the shortest
    augmenting path search takes them (the first term with counts left, through the first of
    its groups with nodes left, as much as both have; a term or group once spent stays so),
    updating ``cap``; the flow pushed."""
    terms, total = len(counts), 0
    for i in range(terms):
        for j, mask in enumerate(masks):
            left = cap[(0, 1 + i)]
            if not left:
                break
            group = 1 + terms + j
            if not mask >> i & 1 or not cap[(group, sink)]:
                continue
            push = min(left, cap[(group, sink)], cap[(1 + i, group)])
            for a, b in ((0, 1 + i), (1 + i, group), (group, sink)):
                cap[(a, b)] -= push
                cap[(b, a)] += push
            total += push
    return total
