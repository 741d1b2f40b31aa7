"""One node during a pass: free resources now and free GPUs over time (its profile).

Each node keeps the GPUs free now and a step profile of how its free GPU count changes later
(running jobs release theirs at start + time limit; reservations take theirs during their
window). A job fits now on a node when it gets enough GPUs, CPUs and memory now and the
profile never drops below its GPU count before its time limit ends, so a job placed now
never delays a reservation. Profiles count GPUs only: CPUs and memory are checked now, not
reserved ahead (jobs that need them but no GPU are rare); GPU-type filters are checked on
the GPUs free now, and profiles assume a node's GPUs are alike.

Exclusive jobs hold a node whole, which GPU counts alone cannot say for jobs that need no
GPU: each node also keeps its *claims*, windows ``[start, end)`` of exclusive jobs running,
placed or reserved there (*whole*: no other job may overlap one) and of reservations for
jobs that need no GPU (no exclusive job may overlap one), and the end times of the jobs
there that hold no GPU (an exclusive job starts only after them).
"""

from __future__ import annotations

import math
from bisect import insort

from rota.scheduler.policy.snapshot import NodeView

INF = math.inf
# free, cpus, memory, used, reserved, changes, releases, claims, gpuless
Saved = tuple[
    list[int],
    float,
    int,
    bool,
    bool,
    list[tuple[float, int]],
    list[float],
    list[tuple[float, float, bool]],
    list[tuple[float, int]],
]


def window_ok(
    level: int, changes: list[tuple[float, int]], gpus: int, start: float, end: float
) -> bool:
    """Whether a profile (free GPUs now, sorted changes) keeps ``gpus`` free over ``[start, end)``.

    Changes at one instant net out before the level is compared.
    """
    n = len(changes)
    i = 0
    while i < n and changes[i][0] <= start:
        level += changes[i][1]
        i += 1
    if level < gpus:
        return False
    while i < n and changes[i][0] < end:
        when = changes[i][0]
        while i < n and changes[i][0] == when:
            level += changes[i][1]
            i += 1
        if level < gpus:
            return False
    return True


class NodeState:
    """One node during a pass."""

    __slots__ = (
        "allocatable",
        "changes",
        "claims",
        "cpus",
        "free",
        "gpuless",
        "holders",
        "idx",
        "memory",
        "releases",
        "reserved",
        "stopping",
        "total",
        "used",
        "view",
    )

    def __init__(self, idx: int, view: NodeView) -> None:
        self.idx = idx
        self.view = view
        self.allocatable = _allocatable(view)
        self.free: list[int] = list(self.allocatable)
        self.total = len(self.free)
        self.cpus = view.cpus
        self.memory = view.memory
        self.used = False
        self.holders: dict[int, tuple[float, int]] = {}  # running job id -> (cpus, memory)
        self.reserved = False  # some reservation takes GPUs here later
        self.stopping = 0  # GPUs held by jobs that were told to stop
        self.changes: list[tuple[float, int]] = []  # (time, delta of free GPUs), sorted
        self.releases: list[float] = []  # one end time per held GPU, sorted (no reservations)
        self.claims: list[tuple[float, float, bool]] = []  # (start, end, whole), sorted
        self.gpuless: list[tuple[float, int]] = []  # (end, job id) of holders of no GPU, sorted

    def save(self) -> Saved:
        """The fields a pass may change (for ``ClusterState.undo``)."""
        return (
            self.free,
            self.cpus,
            self.memory,
            self.used,
            self.reserved,
            list(self.changes),
            list(self.releases),
            list(self.claims),
            list(self.gpuless),
        )

    def restore(self, saved: Saved) -> None:
        (
            self.free,
            self.cpus,
            self.memory,
            self.used,
            self.reserved,
            self.changes,
            self.releases,
            self.claims,
            self.gpuless,
        ) = saved

    def refresh_held(self) -> None:
        """CPUs and memory left by running jobs (``fsum``: the same in any order)."""
        held = self.holders
        view = self.view
        if not held:
            self.cpus, self.memory, self.used = view.cpus, view.memory, False
            return
        self.used = True
        cpus = [c for c, _ in held.values() if c]
        self.cpus = view.cpus - math.fsum(cpus) if cpus else view.cpus
        self.memory = view.memory - sum(m for _, m in held.values())

    def hold(self, count: int, end: float) -> None:
        """``count`` GPUs taken now come free again at ``end``."""
        insort(self.changes, (end, count))
        for _ in range(count):
            insort(self.releases, end)

    def move_release(self, old: float, new: float, count: int) -> None:
        """``count`` GPUs expected free at ``old`` come free at ``new`` instead."""
        if (old, count) in self.changes:
            self.changes.remove((old, count))
            for _ in range(count):
                self.releases.remove(old)
        self.hold(count, new)

    def window_ok(self, gpus: int, start: float, end: float, exclusive: bool = False) -> bool:
        """Whether ``gpus`` GPUs stay free over ``[start, end)`` and no claim keeps a job
        (an ``exclusive`` one) off the node then."""
        if self.claims and self.claimed(start, end, exclusive):
            return False
        return window_ok(len(self.free), self.changes, gpus, start, end)

    def claimed(self, start: float, end: float, exclusive: bool) -> bool:
        """Whether a claim keeps a job (an ``exclusive`` one) off the node in ``[start, end)``."""
        return any(s < end and start < e and (whole or exclusive) for s, e, whole in self.claims)

    def claim(self, start: float, end: float, whole: bool) -> None:
        """Claim the node over ``[start, end)``: for an exclusive job (``whole``), or for a
        job that needs no GPU (keeps exclusive jobs off)."""
        insort(self.claims, (start, end, whole))
        self.reserved = True  # profile walks must see the claim

    def earliest(self, gpus: int, duration: float, after: float, exclusive: bool = False) -> float:
        """Earliest ``t >= after`` with ``gpus`` GPUs free over ``[t, t + duration)`` and no
        claim in the way (``window_ok``); INF if never."""
        if not self.reserved:  # the profile only rises: free from its lower bound on
            return self.lower_bound(gpus, after)
        candidates = [after] + [when for when, delta in self.changes if when > after and delta > 0]
        if self.claims:
            candidates = sorted(candidates + [e for _, e, _ in self.claims if e > after])
        for t in candidates:
            if self.window_ok(gpus, t, t + duration, exclusive):
                return t
        return INF

    def empty_from(self) -> float:
        """When every holder of no GPU has ended (GPU holders are in the profile)."""
        return self.gpuless[-1][0] if self.gpuless else -INF

    def lower_bound(self, gpus: int, after: float) -> float:
        """A time before which ``gpus`` GPUs cannot be free (reservations only lower levels)."""
        return max(after, self.release_bound(gpus))

    def release_bound(self, gpus: int) -> float:
        """When running and placed jobs will have released enough for ``gpus`` free GPUs."""
        missing = gpus - len(self.free)
        if missing <= 0:
            return -INF
        if missing > len(self.releases):
            return INF
        return self.releases[missing - 1]


def _allocatable(view: NodeView) -> tuple[int, ...]:
    """Sorted allocatable GPU indices of a node view."""
    return tuple(sorted(g.index for g in view.gpus if g.allocatable))
