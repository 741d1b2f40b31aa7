"""Reservations: create, list, show and delete bookings of GPUs, and what passes see of them.

The service keeps the reservations whose window is open or ahead in memory, loaded from the
database when it is built, so a scheduler restart in the middle of a window changes nothing.
Passes get them as frozen ``ReservationView``s (``views``); the policy enforces them
(``policy/reserve.py``). Like every service, its methods run on the engine's core thread and
commit before they return.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from rota.scheduler.cluster.model import RESERVATION_HOLD, HistoryKind, JobEvent, JobRecord
from rota.scheduler.cluster.reservation import (
    FLAGS,
    IGNORE_JOBS,
    MAINT,
    PERIODS,
    PURGE_COMP,
    Reservation,
)
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core import access
from rota.scheduler.core.booking import BookingRules
from rota.scheduler.core.errors import (
    AccessDenied,
    AlreadyExists,
    Conflict,
    NotFound,
    UserError,
)
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.policy.snapshot import ReservationView
from rota.scheduler.store.reservations import ReservationStore
from rota.states import ACTIVE_STATES, JobState
from rota.validate import normal_flags

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RECURRING_HORIZON = 28 * 86_400.0  # a recurring booking is checked for overlaps this far ahead
GPU_FIELDS = frozenset({"nodes", "gpus", "gpu_type", "gpus_per_node"})
UPDATABLE = frozenset({"start", "end", "users", "accounts", "flags", "lend"}) | GPU_FIELDS


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
    gpu_ids: Mapping[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Usage:
    """Booked GPU-seconds of a reservation's current window so far, split by who used them."""

    booked: float  # GPUs x seconds from the window's start to now (or its end)
    owners: float  # run by jobs of the reservation
    lent: float  # run by other jobs (borrowers)

    @property
    def idle(self) -> float:
        return max(0.0, self.booked - self.owners - self.lent)


@dataclass(frozen=True, slots=True)
class NodeBookings:
    """What ``ginfo`` shows of a node's reservations: GPUs reserved now (and by which), whether
    a MAINT window is open on it, and its next window that opens later."""

    gpus_now: int = 0
    names_now: tuple[str, ...] = ()
    maintenance: bool = False
    gpus_next: int = 0
    names_next: tuple[str, ...] = ()
    next_start: float = 0.0  # 0: no later window within four weeks


class ReservationService:
    """Open and upcoming reservations by name, as committed. Not thread-safe."""

    def __init__(
        self,
        model: ClusterModel,
        store: ReservationStore,
        clock: Callable[[], float],
        rules: BookingRules,
    ) -> None:
        self.model = model
        self.store = store
        self.clock = clock
        self.rules = rules  # caps on users' bookings (who may book for whom: core.access)
        self.live: dict[str, Reservation] = {r.name: r for r in store.current(clock())}
        self._views: tuple[ReservationView, ...] | None = None
        self._prune(clock())  # recurring ones that ended while the scheduler was down move on
        self._hold_orphans(None)  # pending jobs of those that ended meanwhile

    # ---------------------------------------------------------------- RPCs

    def create(self, request: ReservationRequest, principal: Principal) -> Reservation:
        """Validate, resolve the GPUs, check the principal's rights (AccessDenied) and caps
        (Conflict naming the cap), and store a reservation; errors change nothing."""
        now = self.clock()
        self._prune(now)
        if request.name in self.live or self.store.exists(request.name):
            raise AlreadyExists(f"name: a reservation named {request.name!r} exists already")
        exact = self._known_gpus(request.gpu_ids) if request.gpu_ids else None
        r = self._resolve(request, principal, now, exclude="", gpus=exact)
        r.created_at = now
        self.store.save(r)
        self.live[r.name] = r
        self._changed()
        return r

    def update(
        self, name: str, request: ReservationRequest, given: Iterable[str], principal: Principal
    ) -> Reservation:
        """Change the fields named in ``given`` to ``request``'s values; the rest stay. The
        GPUs are chosen again only when a GPU field is given. A reservation with running jobs
        keeps its start and its GPUs. Errors change nothing."""
        now = self.clock()
        old = self.get(name)
        refusal = access.may_change_reservation(principal, name, old.created_by)
        if refusal:
            raise AccessDenied(refusal)
        fields = set(given)
        unknown = sorted(fields - UPDATABLE)
        if unknown:
            raise UserError(
                f"{unknown[0]}: cannot be updated; updatable: {', '.join(sorted(UPDATABLE))}"
            )
        if not fields:
            raise UserError("update: give at least one option to change")
        regpu = bool(fields & GPU_FIELDS)
        base = ReservationRequest(
            name=old.name,
            start=old.start,
            end=old.end,
            nodes=(),
            gpus=old.gpu_count(),
            users=old.users,
            accounts=old.accounts,
            flags=old.flags,
            lend=old.lend,
        )
        merged = dataclasses.replace(base, **{f: getattr(request, f) for f in fields})
        if regpu and not ("nodes" in fields or "gpus" in fields):
            raise UserError("nodes/gpus: changing gpu_type or gpus_per_node needs --gpus N too")
        if "nodes" in fields:
            merged = dataclasses.replace(merged, gpus=0)
        elif "gpus" in fields:
            merged = dataclasses.replace(merged, nodes=())
        running = self.jobs_of(name)
        if running and (regpu or merged.start != old.start):
            raise Conflict(
                f"start/gpus: reservation {name!r} has running jobs ({', '.join(running[:10])}); "
                "only its end, users, accounts, flags and lending may change"
            )
        r = self._resolve(merged, principal, now, exclude=name, gpus=None if regpu else old.gpus)
        r.created_by, r.created_at = old.created_by, old.created_at
        self.store.save(r)
        self.live[name] = r
        self._changed()
        return r

    def import_many(
        self,
        requests: list[ReservationRequest],
        principal: Principal,
        dry_run: bool,
        skip_bad: bool,
    ) -> tuple[list[str | None], bool]:
        """Create ``requests`` in order, each checked against the others before it: the refusal
        of each (None: fine) and whether anything was stored. Nothing is stored on
        ``dry_run``, or when some request is refused and not ``skip_bad``. A row the principal
        may not book (for other users or accounts) refuses the whole import (AccessDenied
        naming the booking): that is a matter of rights, not of a bad row."""
        now = self.clock()
        self._prune(now)
        for request in requests:
            flags = normal_flags(request.flags)
            refusal = access.may_book(principal, request.users, request.accounts, flags)
            if refusal:
                raise AccessDenied(f"booking {request.name}: {refusal}")
        refusals: list[str | None] = []
        made: list[Reservation] = []
        try:
            for request in requests:
                try:
                    if request.name in self.live or self.store.exists(request.name):
                        raise AlreadyExists(f"name: a reservation named {request.name!r} exists")
                    r = self._resolve(request, principal, now, exclude="", gpus=None)
                except (UserError, Conflict) as exc:
                    refusals.append(str(exc))
                    continue
                r.created_at = now
                self.live[r.name] = r  # later rows see it
                made.append(r)
                refusals.append(None)
        finally:
            for r in made:
                del self.live[r.name]
        keep = made and not dry_run and (skip_bad or all(x is None for x in refusals))
        if keep:
            for r in made:
                self.store.save(r)
                self.live[r.name] = r
            self._changed()
        return refusals, bool(keep)

    def _resolve(
        self,
        request: ReservationRequest,
        principal: Principal,
        now: float,
        exclude: str,
        gpus: dict[str, tuple[int, ...]] | None,
    ) -> Reservation:
        """The reservation ``request`` describes, checked against the others (all but
        ``exclude``), running jobs and ``principal``'s rights; ``gpus`` keeps those GPUs.
        The flags are normalised once: the value checked is the value stored."""
        flags = normal_flags(request.flags)
        refusal = access.may_book(principal, request.users, request.accounts, flags)
        if refusal:
            raise AccessDenied(refusal)
        _check_flags(flags)
        _check_request(request, now, gpus is not None)
        period = next((PERIODS[f] for f in flags if f in PERIODS), 0.0)
        if period and request.end - request.start > period:
            raise UserError(f"end: a recurring window may last at most {period / 3600:g} h")
        probe = Reservation(request.name, request.start, request.end, {}, flags=flags)
        busy = self._booked(probe, MAINT in flags, exclude)
        if gpus is not None:
            self._check_free(gpus, busy)
        elif request.nodes and not request.gpus:
            gpus = self._whole_nodes(request.nodes, busy)
        else:
            gpus = self._choose(request, busy, IGNORE_JOBS in flags)
        if IGNORE_JOBS not in flags and not (exclude and self.jobs_of(exclude)):
            self._check_jobs(gpus, request.start)
        r = Reservation(
            name=request.name,
            start=request.start,
            end=request.end,
            gpus=gpus,
            users=request.users,
            accounts=request.accounts,
            flags=flags,
            lend=request.lend,
            created_by=principal.user,
        )
        if not principal.admin:
            others = [o for o in self.live.values() if o.name != request.name]
            over = self.rules.over_cap(principal.user, r, now, others)
            if over:
                raise Conflict(over)
        return r

    def delete(self, name: str, principal: Principal) -> Reservation:
        """Remove a reservation that no running job belongs to; its pending jobs then wait
        with ``ReservationDeleted``."""
        r = self.get(name)
        refusal = access.may_change_reservation(principal, name, r.created_by)
        if refusal:
            raise AccessDenied(refusal)
        jobs = self.jobs_of(name)
        if jobs:
            ids = ", ".join(jobs[:10])
            raise Conflict(f"reservation {name!r} has running jobs ({ids}); cancel them first")
        self.store.delete(name)
        del self.live[name]
        self._hold_orphans({name}, "was deleted")
        self._changed()
        return r

    def get(self, name: str) -> Reservation:
        self._prune(self.clock())
        r = self.live.get(name)
        if r is None:
            raise NotFound(f"no reservation named {name!r} (open or upcoming)")
        return r

    def all(self) -> list[Reservation]:
        """Open and upcoming reservations, earliest first."""
        self._prune(self.clock())
        return sorted(self.live.values(), key=lambda r: (r.start, r.name))

    # ---------------------------------------------------------------- for other services

    def views(self, now: float) -> tuple[ReservationView, ...]:
        """What a pass at ``now`` honours (the same tuple while nothing changed)."""
        self._prune(now)
        if self._views is None:
            self._views = tuple(r.policy_view() for r in self.all())
        return self._views

    def window_end(self, name: str, now: float) -> float | None:
        """End of reservation ``name``'s window when it is open at ``now``."""
        r = self.live.get(name)
        if r is None or r.flex:  # FLEX: its jobs may run past the window
            return None
        return r.end if r.start <= now < r.end else None

    def check_job(self, name: str, user: str, account: str) -> str | None:
        """Why a job of ``user``/``account`` may not name reservation ``name`` (None: it may)."""
        r = self.live.get(name)
        if r is None:
            known = ", ".join(sorted(self.live)) or "none"
            return f"unknown reservation {name!r} (open or upcoming: {known})"
        if user not in r.users and account not in r.accounts:
            return (
                f"reservation {name!r} allows users {', '.join(r.users) or '-'} and accounts "
                f"{', '.join(r.accounts) or '-'}, not user {user!r} with account {account!r}"
            )
        return None

    def reserved_now(self, now: float | None = None) -> dict[str, int]:
        """GPUs reserved at ``now`` (default: the clock) per node name."""
        at = self.clock() if now is None else now
        out: dict[str, int] = {}
        for r in self.live.values():
            if r.start <= at < r.end:
                for node, idx in r.gpus.items():
                    out[node] = out.get(node, 0) + len(idx)
        return out

    def on_nodes(self, names: Iterable[str]) -> dict[str, NodeBookings]:
        """The bookings of the nodes ``names`` that have any, now and next (windows up to
        four weeks ahead)."""
        now = self.clock()
        wanted = set(names)
        now_gpus: dict[str, int] = {}
        now_names: dict[str, list[str]] = {}
        maint: set[str] = set()
        later: dict[str, list[tuple[float, str, int]]] = {}
        for r in sorted(self.live.values(), key=lambda r: r.name):
            for start, end in r.windows(now, now + RECURRING_HORIZON):
                for node, idx in r.gpus.items():
                    if node not in wanted:
                        continue
                    if start <= now < end:
                        now_gpus[node] = now_gpus.get(node, 0) + len(idx)
                        now_names.setdefault(node, []).append(r.name)
                        if MAINT in r.flags:
                            maint.add(node)
                    elif start > now:
                        later.setdefault(node, []).append((start, r.name, len(idx)))
        out: dict[str, NodeBookings] = {}
        for node in set(now_gpus) | set(later):
            first = min((t for t, _, _ in later.get(node, ())), default=0.0)
            nxt = [(n, k) for t, n, k in later.get(node, ()) if t == first]
            out[node] = NodeBookings(
                gpus_now=now_gpus.get(node, 0),
                names_now=tuple(now_names.get(node, ())),
                maintenance=node in maint,
                gpus_next=sum(k for _, k in nxt),
                names_next=tuple(n for n, _ in nxt),
                next_start=first,
            )
        return out

    def jobs_of(self, name: str) -> list[str]:
        """Display ids of the active (running) jobs that belong to reservation ``name``."""
        found = sorted(
            (j.id, j.display_id)
            for j in self.model.jobs.values()
            if j.state in ACTIVE_STATES and j.spec.reservation == name
        )
        return [shown for _, shown in found]

    # ---------------------------------------------------------------- internals

    def edges(self) -> list[float]:
        """Every future start and end of the open and upcoming windows (the clock wakes the
        scheduler then): runs the housekeeping due now first."""
        now = self.clock()
        self.housekeeping()
        return sorted({t for r in self.live.values() for t in (r.start, r.end) if t > now})

    def housekeeping(self) -> list[str]:
        """Move recurring reservations to their next window, forget ended ones and delete
        open PURGE_COMP ones whose jobs have all ended; returns the names purged."""
        now = self.clock()
        self._prune(now)
        purged = [
            r.name
            for r in list(self.live.values())
            if PURGE_COMP in r.flags and r.start <= now and self._completed(r)
        ]
        for name in purged:
            self.store.delete(name)
            del self.live[name]
        if purged:
            self._changed()
        return purged

    def usage(self, name: str) -> Usage:
        """How the GPU-time booked so far in the current window was spent."""
        r = self.get(name)
        now = self.clock()
        until = min(now, r.end)
        booked = max(0.0, until - r.start) * r.gpu_count()
        cells = r.cells()
        owners = lent = 0.0
        jobs = [*self.model.jobs.values(), *self.model.store.ended_jobs(r.start)]
        for job in jobs:
            if job.start_time is None:
                continue
            end = job.end_time if job.state.terminal and job.end_time else until
            seconds = max(0.0, min(end, until) - max(job.start_time, r.start))
            held = sum((a.node, g) in cells for a in job.allocation for g in a.gpus)
            if job.spec.reservation == name:
                owners += seconds * held
            else:
                lent += seconds * held
        return Usage(booked, owners, lent)

    def _completed(self, r: Reservation) -> bool:
        """Whether some job of ``r`` has run and none is pending or active."""
        name = r.name
        if any(j.spec.reservation == name for j in self.model.jobs.values()):
            return False
        return any(j.spec.reservation == name for j in self.model.store.ended_jobs(r.start))

    def _prune(self, now: float) -> None:
        changed = False
        ended: set[str] = set()
        for name, r in list(self.live.items()):
            if r.advance(now):
                self.store.save(r)
                changed = True
            elif r.end <= now:
                del self.live[name]
                ended.add(name)
        if ended:
            self._hold_orphans(ended, "has ended")
        if changed or ended:
            self._changed()

    def _hold_orphans(self, names: set[str] | None, what: str = "is gone") -> None:
        """Hold the pending jobs that name a reservation of ``names`` (None: any reservation
        not open or upcoming), as SLURM does: reason ``ReservationDeleted`` until released
        (once a reservation of that name exists again) or cancelled."""
        held: list[JobRecord] = []
        events: list[JobEvent] = []
        now = self.clock()
        for job in self.model.jobs.values():
            name = job.spec.reservation
            if job.state is not JobState.PENDING or not name or job.held:
                continue
            if name in self.live if names is None else name not in names:
                continue
            job.held = RESERVATION_HOLD
            held.append(job)
            text = (
                f"held: reservation {name} {what}; cancel it, or release it once a "
                "reservation of that name exists again"
            )
            state = job.state.value
            events.append(JobEvent(job.id, now, job.attempt, state, state, text, HistoryKind.INFO))
        if held:
            self.model.commit(held, events)

    def _changed(self) -> None:
        self._views = None
        self.model.bump()

    def _booked(self, probe: Reservation, maint: bool, exclude: str) -> dict[tuple[str, int], str]:
        """GPUs other reservations (not ``exclude``) hold in any window of ``probe`` -> the
        holder's name (none for a MAINT request, and MAINT reservations never conflict).
        Recurring windows are compared over ``RECURRING_HORIZON``."""
        if maint:
            return {}
        horizon = probe.end + (RECURRING_HORIZON if probe.period else 0.0)
        windows = probe.windows(probe.start, horizon)
        out: dict[tuple[str, int], str] = {}
        for r in self.live.values():
            if r.name != exclude and not r.maint and any(r.overlaps(s, e) for s, e in windows):
                out.update(dict.fromkeys(r.cells(), r.name))
        return out

    def _check_free(
        self, gpus: dict[str, tuple[int, ...]], busy: dict[tuple[str, int], str]
    ) -> None:
        clash = sorted({busy[(n, g)] for n, idx in gpus.items() for g in idx if (n, g) in busy})
        if clash:
            raise Conflict(f"start/end: its GPUs are reserved by {', '.join(clash)} then")

    def _known_gpus(self, gpu_ids: Mapping[str, Iterable[int]]) -> dict[str, tuple[int, ...]]:
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

    def _whole_nodes(
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

    def _held_until(self) -> dict[tuple[str, int], tuple[int, float]]:
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

    def _choose(
        self, request: ReservationRequest, busy: dict[tuple[str, int], str], ignore_jobs: bool
    ) -> dict[str, tuple[int, ...]]:
        """``request.gpus`` GPUs free of other reservations (and of jobs running into the
        window unless ``ignore_jobs``): the fewest nodes, lowest indices."""
        held = {} if ignore_jobs else self._held_until()
        unknown = [n for n in request.nodes if n not in self.model.nodes]
        if unknown:
            known = ", ".join(sorted(self.model.nodes)) or "none"
            raise UserError(f"nodes: unknown node {unknown[0]!r} (registered: {known})")
        per = request.gpus_per_node
        kind = request.gpu_type.lower()
        candidates: list[tuple[str, list[int]]] = []
        for node in sorted(self.model.nodes.values(), key=lambda n: n.name):
            if request.nodes and node.name not in request.nodes:
                continue
            free = [
                g.index
                for g in node.inventory.gpus
                if (not kind or kind in g.name.lower())
                and (node.name, g.index) not in busy
                and held.get((node.name, g.index), (0, 0.0))[1] <= request.start
            ]
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
            holders = sorted({who for (n, _g), who in busy.items() if n in request.nodes})
            held_by = f" (reserved by {', '.join(holders)})" if holders else ""
            raise Conflict(
                f"gpus: only {found} GPU(s){what}{spread} are free of other reservations"
                f"{'' if ignore_jobs else ' and running jobs'} in that window; asked for "
                f"{request.gpus}{held_by}"
            )
        return gpus

    def _check_jobs(self, gpus: dict[str, tuple[int, ...]], start: float) -> None:
        held = self._held_until()
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


def _check_flags(flags: tuple[str, ...]) -> None:
    """UserError for an unknown flag or two periods; ``flags`` are ``normal_flags``."""
    for flag in flags:
        if flag not in FLAGS:
            raise UserError(f"flags: unknown flag {flag!r}; known: {', '.join(FLAGS)}")
    if len(set(flags) & set(PERIODS)) > 1:
        raise UserError("flags: give at most one of DAILY and WEEKLY")


def _check_request(request: ReservationRequest, now: float, gpus_known: bool) -> None:
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
    if not request.users and not request.accounts:
        raise UserError("users/accounts: name who may use it (--users LIST or --accounts LIST)")
