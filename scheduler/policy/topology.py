"""Pick GPUs inside a node: prefer sets whose pairs share the closest interconnect."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

# nvidia-smi topo -m levels, closest first. NV# (any NVLink count) is read as NVLINK.
LEVELS = ("SAME", "NVLINK", "PIX", "PXB", "PHB", "NODE", "SYS")
_RANK = {name: rank for rank, name in enumerate(LEVELS)}
_UNKNOWN = len(LEVELS)
_MAX_COMBINATIONS = 5000  # beyond this many candidate sets, take the lowest indices


def level_rank(level: str) -> int:
    """Rank of a link level (0 closest); ``NV4`` counts as NVLINK, unknown names last."""
    name = level.upper()
    if name.startswith("NV"):
        return _RANK["NVLINK"]
    return _RANK.get(name, _UNKNOWN)


def choose_gpus(
    free: Sequence[int], count: int, links: Mapping[tuple[int, int], str]
) -> tuple[int, ...]:
    """``count`` GPUs out of ``free`` (sorted host indices) with the closest links.

    Sets are compared by their worst pair, then the sum over pairs, then indices. Without
    topology, or when every GPU is taken, the lowest indices win.
    """
    if count <= 1 or not links or count >= len(free):
        return tuple(free[:count])
    sets = combinations(free, count)
    if _n_choose_k(len(free), count) > _MAX_COMBINATIONS:
        return tuple(free[:count])
    best: tuple[int, ...] = ()
    best_score = (_UNKNOWN + 1, 0)
    for cand in sets:
        ranks = [
            level_rank(links.get((a, b)) or links.get((b, a)) or "")
            for a, b in combinations(cand, 2)
        ]
        score = (max(ranks), sum(ranks))
        if score < best_score:
            best, best_score = cand, score
    return best


def _n_choose_k(n: int, k: int) -> int:
    out = 1
    for i in range(k):
        out = out * (n - i) // (i + 1)
    return out
