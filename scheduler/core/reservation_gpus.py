"""What a booking may take: the checks of a ``greserve`` request and the GPUs it gets.

``GpuPicker`` resolves a request's GPUs against the nodes, the other reservations and the
running jobs (read only; the reservation service stores what it returns).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from rota.scheduler.cluster.model import AdminState, NodeState
from rota.scheduler.cluster.reservation import (
    FLAGS,
    IGNORE_JOBS,
    LEND,
    PERIODS,
    UNUSED_POLICIES,
    Reservation,
)
from rota.scheduler.core.errors import Conflict, UserError
from rota.scheduler.core.model import ClusterModel
from rota.states import ACTIVE_STATES, JobState

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RECURRING_HORIZON = 28 * 86_400.0  # a recurring booking is checked for overlaps this far ahead


@dataclass(frozen=True, slots=True)
class ReservationRequest:
    """What ``greserve create`` asks for; ``start``/``end`` are Unix seconds.

    GPUs come from ``nodes`` (every GPU of each) or ``gpus`` (a count, chosen among GPUs free
    of other reservations in the window, optionally of ``gpu_type`` and ``gpus_per_node`` per
    node); with both, the count is chosen among the GPUs of those nodes. ``gpu_ids`` (node ->
    host GPU indices, as the dashboard's timeline selects them) books exactly those GPUs and
    takes the place of the other GPU fields.
    """

    name: str
    start: float
    end: float
    nodes: tuple[str, ...] = ()
    gpus: int = 0
    gpu_type: str = ""
    gpus_per_node: int = 0
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    lend: bool = True
    unused: str = LEND  # the no-show rule's policy (UNUSED_POLICIES)
    gpu_ids: Mapping[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)


class GpuPicker:
    """The GPUs a request may book, as of the model and ``clock``; ``unhealthy`` gives a
    node's unhealthy GPUs (index -> why). Not thread-safe."""

    def __init__(
        self,
        model: ClusterModel,
        clock: Callable[[], float],
        unhealthy: Callable[[NodeState], Mapping[int, str]],
    ) -> None:
        self.model = model
        self.clock = clock
        self.unhealthy = unhealthy

    def booked(
        self, probe: Reservation, maint: bool, exclude: str, others: Iterable[Reservation]
    ) -> dict[tuple[str, int], str]:
        """GPUs ``others`` (but ``exclude``) hold in any window of ``probe`` -> the
        holder's name (none for a MAINT request, and MAINT reservations never conflict).
        Recurring windows are compared over ``RECURRING_HORIZON``."""
        if maint:
            return {}
        return {
            cell: r.name
            for r in _overlapping(probe, exclude, others)
            if not r.maint
            for cell in r.cells()
        }

    def unavailable(
        self, probe: Reservation, exclude: str, others: Iterable[Reservation]
    ) -> dict[tuple[str, int], str]:
        """GPUs a user may not book for ``probe`` -> why: those of a node that is drained
        or DOWN now, unhealthy now, or under a MAINT reservation (but ``exclude``) in one of
        its windows. The state now counts for a later window too (a drain may outlast it);
        administrators may book them all the same."""
        out: dict[tuple[str, int], str] = {}
        for node in self.model.nodes.values():
            why = _node_unavailable(node)
            bad = self.unhealthy(node)
            for g in node.inventory.gpus:
                reason = why or (
                    f"GPU {g.index} of {node.name} is unhealthy: {bad[g.index]}"
                    if g.index in bad
                    else ""
                )
                if reason:
                    out[(node.name, g.index)] = reason
        for r in _overlapping(probe, exclude, others):
            if r.maint:
                for cell in r.cells():
                    out.setdefault(cell, f"{cell[0]} is under maintenance ({r.name}) then")
        return out

    def check_available(
        self, gpus: Mapping[str, Iterable[int]], out: Mapping[tuple[str, int], str], field: str
    ) -> None:
        """Conflict naming ``field`` and every reason some of ``gpus`` are in ``out``."""
        why = sorted({out[(n, g)] for n, idx in gpus.items() for g in idx if (n, g) in out})
        if why:
            raise Conflict(f"{field}: {'; '.join(why)} (an administrator may still book it)")

    def check_added(
        self,
        gpus: Mapping[str, Iterable[int]],
        probe: Reservation,
        old: Reservation | None,
        others: Iterable[Reservation],
    ) -> None:
        """Conflict naming ``start/end`` when the time ``probe`` (reservation ``old`` changed,
        keeping ``gpus``) adds outside ``old``'s window meets GPUs out of service, as
        ``unavailable`` has them for a user's new booking."""
        parts = [(probe.start, probe.end)]
        if old is not None:
            parts = [
                (probe.start, min(probe.end, old.start)),
                (max(probe.start, old.end), probe.end),
            ]
        others = list(others)
        for start, end in parts:
            if end > start:
                added = Reservation(probe.name, start, end, {})
                self.check_available(gpus, self.unavailable(added, probe.name, others), "start/end")

    def check_free(
        self, gpus: dict[str, tuple[int, ...]], busy: dict[tuple[str, int], str]
    ) -> None:
        clash = sorted({busy[(n, g)] for n, idx in gpus.items() for g in idx if (n, g) in busy})
        if clash:
            raise Conflict(f"start/end: its GPUs are reserved by {', '.join(clash)} then")

    def known_gpus(self, gpu_ids: Mapping[str, Iterable[int]]) -> dict[str, tuple[int, ...]]:
        """``gpu_ids`` once every node and GPU index in it exists (UserError naming the
        first that does not)."""
        gpus: dict[str, tuple[int, ...]] = {}
        for name, indices in sorted(gpu_ids.items()):
            node = self.model.nodes.get(name)
            if node is None:
                known = ", ".join(sorted(self.model.nodes)) or "none"
                raise UserError(f"gpus: unknown node {name!r} (registered: {known})")
            have = sorted(g.index for g in node.inventory.gpus)
            wanted = tuple(sorted(set(indices)))
            missing = [i for i in wanted if i not in have]
            if missing or not wanted:
                raise UserError(
                    f"gpus: node {name} has no GPU {missing[0] if missing else '(none given)'} "
                    f"(its GPUs: {', '.join(map(str, have)) or 'none reported'})"
                )
            gpus[name] = wanted
        return gpus

    def whole_nodes(
        self, names: Iterable[str], busy: dict[tuple[str, int], str]
    ) -> dict[str, tuple[int, ...]]:
        gpus: dict[str, tuple[int, ...]] = {}
        for name in names:
            node = self.model.nodes.get(name)
            if node is None:
                known = ", ".join(sorted(self.model.nodes)) or "none"
                raise UserError(f"nodes: unknown node {name!r} (registered: {known})")
            idx = tuple(g.index for g in node.inventory.gpus)
            if not idx:
                raise UserError(f"nodes: node {name!r} has no GPUs (its agent has not reported)")
            clash = sorted({busy[(name, g)] for g in idx if (name, g) in busy})
            if clash:
                raise Conflict(
                    f"nodes: GPUs of {name} are reserved by {', '.join(clash)} in that window"
                )
            gpus[name] = idx
        return gpus

    def held_until(self) -> dict[tuple[str, int], tuple[int, float]]:
        """(node, GPU) -> (job id, expected end) of the GPUs running jobs hold."""
        out: dict[tuple[str, int], tuple[int, float]] = {}
        now = self.clock()
        for job in self.model.jobs.values():
            if job.state not in ACTIVE_STATES:
                continue
            end = (job.start_time or now) + job.time_limit
            if job.state is JobState.COMPLETING:
                end = now
            for a in job.allocation:
                for g in a.gpus:
                    out[(a.node, g)] = (job.id, end)
        return out

    def choose(
        self,
        request: ReservationRequest,
        busy: dict[tuple[str, int], str],
        ignore_jobs: bool,
        out: Mapping[tuple[str, int], str],
    ) -> dict[str, tuple[int, ...]]:
        """``request.gpus`` GPUs free of other reservations (and of jobs running into the
        window unless ``ignore_jobs``) and not ``out`` (unavailable): the fewest nodes,
        lowest indices. A shortfall's Conflict names the reservations holding GPUs of the
        kind asked for and why the unavailable ones are."""
        held = {} if ignore_jobs else self.held_until()
        unknown = [n for n in request.nodes if n not in self.model.nodes]
        if unknown:
            known = ", ".join(sorted(self.model.nodes)) or "none"
            raise UserError(f"nodes: unknown node {unknown[0]!r} (registered: {known})")
        per = request.gpus_per_node
        kind = request.gpu_type.lower()
        candidates: list[tuple[str, list[int]]] = []
        holders: set[str] = set()
        reasons: set[str] = set()
        for node in sorted(self.model.nodes.values(), key=lambda n: n.name):
            if request.nodes and node.name not in request.nodes:
                continue
            free = []
            for g in node.inventory.gpus:
                cell = (node.name, g.index)
                if kind and kind not in g.name.lower():
                    continue
                if cell in busy:
                    holders.add(busy[cell])
                elif cell in out:
                    reasons.add(out[cell])
                elif held.get(cell, (0, 0.0))[1] <= request.start:
                    free.append(g.index)
            if len(free) >= max(per, 1):
                candidates.append((node.name, free))
        candidates.sort(key=lambda c: -len(c[1]))
        left = request.gpus
        gpus: dict[str, tuple[int, ...]] = {}
        for name, free in candidates:
            if left <= 0:
                break
            take = min(per or len(free), left)
            gpus[name] = tuple(free[:take])
            left -= take
        if left > 0:
            what = f" of type {request.gpu_type}" if request.gpu_type else ""
            spread = f", {per} per node" if per else ""
            found = request.gpus - left
            named = [f"reserved by {', '.join(sorted(holders))}"] if holders else []
            named += sorted(reasons)
            held_by = f" ({'; '.join(named)})" if named else ""
            raise Conflict(
                f"gpus: only {found} GPU(s){what}{spread} are free of other reservations"
                f"{'' if ignore_jobs else ' and running jobs'} in that window; asked for "
                f"{request.gpus}{held_by}"
            )
        return gpus

    def check_jobs(self, gpus: dict[str, tuple[int, ...]], start: float) -> None:
        held = self.held_until()
        clash = sorted(
            {
                held[(node, g)][0]
                for node, idx in gpus.items()
                for g in idx
                if (node, g) in held and held[(node, g)][1] > start
            }
        )
        if clash:
            ids = ", ".join(str(j) for j in clash[:10])
            raise Conflict(
                f"nodes: running jobs {ids} hold some of these GPUs into the window; wait for "
                f"them, pick other GPUs or add the flag {IGNORE_JOBS}"
            )


def _overlapping(
    probe: Reservation, exclude: str, others: Iterable[Reservation]
) -> Iterable[Reservation]:
    """``others`` (but ``exclude``) open in some window of ``probe`` (recurring windows
    compared over ``RECURRING_HORIZON``)."""
    horizon = probe.end + (RECURRING_HORIZON if probe.period else 0.0)
    windows = probe.windows(probe.start, horizon)
    return [r for r in others if r.name != exclude and any(r.overlaps(s, e) for s, e in windows)]


def _node_unavailable(node: NodeState) -> str:
    """Why no GPU of ``node`` may be booked by a user now ("" when it is in service)."""
    if not node.connected:
        return f"node {node.name} is DOWN (agent not connected)"
    if node.admin_state is AdminState.DRAIN:
        return f"node {node.name} is drained: {node.reason}"
    if not node.engine_healthy:
        return f"node {node.name} is DOWN (container engine unhealthy: {node.engine_error})"
    return ""


def check_flags(flags: tuple[str, ...]) -> None:
    """UserError for an unknown flag or two periods; ``flags`` are ``normal_flags``."""
    for flag in flags:
        if flag not in FLAGS:
            raise UserError(f"flags: unknown flag {flag!r}; known: {', '.join(FLAGS)}")
    if len(set(flags) & set(PERIODS)) > 1:
        raise UserError("flags: give at most one of DAILY and WEEKLY")


def check_request(request: ReservationRequest, now: float, gpus_known: bool) -> None:
    if not _NAME.match(request.name):
        raise UserError(
            "name: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit; "
            f"got {request.name!r}"
        )
    if request.end <= request.start:
        raise UserError("end: must be after start")
    if request.end <= now:
        raise UserError("end: is in the past")
    if not gpus_known and not (request.nodes or request.gpus):
        raise UserError("nodes/gpus: give --nodes LIST, --gpus N or both (N GPUs of those nodes)")
    if request.gpus < 0 or request.gpus_per_node < 0:
        raise UserError("gpus: must be a positive count (gpus_per_node >= 0)")
    if request.gpus_per_node and request.gpus % request.gpus_per_node:
        raise UserError(
            f"gpus_per_node: {request.gpus} GPUs cannot be split {request.gpus_per_node} per node"
        )
    if request.unused not in UNUSED_POLICIES:
        raise UserError(f"unused: {request.unused!r} is not one of {', '.join(UNUSED_POLICIES)}")
    if not request.users and not request.accounts:
        raise UserError("users/accounts: name who may use it (--users LIST or --accounts LIST)")
