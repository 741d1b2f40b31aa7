"""Reservations: create, list, show and delete bookings of GPUs, and what passes see of them.

The service keeps the reservations whose window is open or ahead in memory, loaded from the
database when it is built, so a scheduler restart in the middle of a window changes nothing.
Reads never write: they ask the pure ``ReservationCalendar`` (``policy/calendar.py``) built
from the records and the clock, which moves recurring windows on and leaves ended ones out.
Passes get its frozen ``ReservationView``s (``views``); the policy enforces them
(``policy/reserve.py``). ``advance(now)``, called by the periodic tick only, is the one step
that writes what time did: recurring windows moved on, ended ones forgotten and their pending
jobs held, PURGE_COMP ones deleted. Like every service, its methods run on the engine's core
thread and commit before they return. The GPUs a request gets: ``core/reservation_gpus.py``;
how a window was spent: ``core/reservation_usage.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence

from rota.inputs import normal_flags
from rota.scheduler.cluster.model import (
    RESERVATION_HOLD,
    HistoryKind,
    JobEvent,
    JobRecord,
    NodeState,
)
from rota.scheduler.cluster.reservation import IGNORE_JOBS, MAINT, PERIODS, PURGE_COMP, Reservation
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core import authz, node_bookings
from rota.scheduler.core.booking import BookingRules
from rota.scheduler.core.errors import (
    AccessDenied,
    AlreadyExists,
    Conflict,
    NotFound,
    UserError,
)
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.node_bookings import NodeBookings
from rota.scheduler.core.reservation_gpus import (
    GpuPicker,
    ReservationRequest,
    check_flags,
    check_request,
)
from rota.scheduler.core.reservation_usage import Usage, spent, window_usage
from rota.scheduler.policy.calendar import ReservationCalendar
from rota.scheduler.policy.snapshot import ReservationView
from rota.scheduler.store.protocols import (
    BookingMail,
    JobRepository,
    ReservationRepository,
)
from rota.states import ACTIVE_STATES, JobState

GPU_FIELDS = frozenset({"nodes", "gpus", "gpu_type", "gpus_per_node"})
UPDATABLE = frozenset({"start", "end", "users", "accounts", "flags", "lend", "unused"}) | GPU_FIELDS


class ReservationService:
    """Open and upcoming reservations by name, as committed. Not thread-safe."""

    def __init__(
        self,
        model: ClusterModel,
        store: ReservationRepository,
        jobs: JobRepository,
        clock: Callable[[], float],
        rules: BookingRules,
        unhealthy: Callable[[NodeState], Mapping[int, str]],
    ) -> None:
        self.model = model
        self.store = store
        self.stored_jobs = jobs  # ended jobs that ran in a reservation
        self.clock = clock
        self.rules = rules  # caps on users' bookings (who may book for whom: core.authz)
        self.picker = GpuPicker(model, clock, unhealthy)
        self.live: dict[str, Reservation] = {r.name: r for r in store.current(clock())}
        self._views: tuple[ReservationView, ...] | None = None  # of ``live``, as stored
        self._swept = False  # the first ``advance`` holds jobs of reservations gone meanwhile

    # ---------------------------------------------------------------- RPCs

    def create(self, request: ReservationRequest, principal: Principal) -> Reservation:
        """Validate, resolve the GPUs, check the principal's rights (AccessDenied) and caps
        (Conflict naming the cap), and store a reservation; errors change nothing."""
        now = self.clock()
        if request.name in self.live or self.store.exists(request.name):
            raise AlreadyExists(f"name: a reservation named {request.name!r} exists already")
        exact = self.picker.known_gpus(request.gpu_ids) if request.gpu_ids else None
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
        refusal = authz.may_change_reservation(principal, name, old.created_by)
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
            unused=old.unused,
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
        r.created_by, r.created_at, r.given_back = old.created_by, old.created_at, old.given_back
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
        for request in requests:
            flags = normal_flags(request.flags)
            refusal = authz.may_book(
                principal, request.users, request.accounts, flags, self.rules.users_may_repeat
            )
            if refusal:
                raise AccessDenied(f"booking {request.name}: {refusal}")
        refusals: list[str | None] = []
        made: list[Reservation] = []
        try:
            for request in requests:
                try:
                    if request.name in self.live or self.store.exists(request.name):
                        raise AlreadyExists(f"name: a reservation named {request.name!r} exists")
                    exact = self.picker.known_gpus(request.gpu_ids) if request.gpu_ids else None
                    r = self._resolve(request, principal, now, exclude="", gpus=exact)
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
        refusal = authz.may_book(
            principal, request.users, request.accounts, flags, self.rules.users_may_repeat
        )
        if refusal:
            raise AccessDenied(refusal)
        check_flags(flags)
        check_request(request, now, gpus is not None)
        period = next((PERIODS[f] for f in flags if f in PERIODS), 0.0)
        if period and request.end - request.start > period:
            raise UserError(f"end: a recurring window may last at most {period / 3600:g} h")
        probe = Reservation(request.name, request.start, request.end, {}, flags=flags)
        picker = self.picker
        # a one-off window the no-show rule released holds its GPUs no more
        holding = [r for r in self.live.values() if r.period or not r.policy_view().released]
        busy = picker.booked(probe, MAINT in flags, exclude, holding)
        # users may not book what is out of service; an update keeping its GPUs is checked
        # for the time it adds only (a drain or MAINT window over the old one stays theirs)
        out = {} if principal.admin else picker.unavailable(probe, exclude, holding)
        if gpus is not None:
            picker.check_free(gpus, busy)
            if not exclude:
                picker.check_available(gpus, out, "gpus")
            elif not principal.admin:
                picker.check_added(gpus, probe, self.live.get(exclude), holding)
        elif request.nodes and not request.gpus:
            gpus = picker.whole_nodes(request.nodes, busy)
            picker.check_available(gpus, out, "nodes")
        else:
            gpus = picker.choose(request, busy, IGNORE_JOBS in flags, out)
        if IGNORE_JOBS not in flags and not (exclude and self.jobs_of(exclude)):
            picker.check_jobs(gpus, request.start)
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
            unused=request.unused,
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
        refusal = authz.may_change_reservation(principal, name, r.created_by)
        if refusal:
            raise AccessDenied(refusal)
        jobs = self.jobs_of(name)
        if jobs:
            ids = ", ".join(jobs[:10])
            raise Conflict(f"reservation {name!r} has running jobs ({ids}); cancel them first")
        self.store.delete(name)
        del self.live[name]
        self._changed()
        self._hold_orphans({name}, self.live, "was deleted")
        return r

    def get(self, name: str) -> Reservation:
        """Reservation ``name`` as of the clock (NotFound unless open or upcoming)."""
        r = self._current(self.clock()).get(name)
        if r is None:
            raise NotFound(f"no reservation named {name!r} (open or upcoming)")
        return r

    def all(self) -> list[Reservation]:
        """Open and upcoming reservations as of the clock, earliest first."""
        return sorted(self._current(self.clock()).values(), key=lambda r: (r.start, r.name))

    # ---------------------------------------------------------------- for other services

    def calendar(self, now: float | None = None) -> ReservationCalendar:
        """The reservations as of ``now`` (default: the clock); builds, never writes."""
        return ReservationCalendar(self._stored_views(), self.clock() if now is None else now)

    def views(self, now: float) -> tuple[ReservationView, ...]:
        """What a pass at ``now`` honours: the calendar's reservations (the same tuple while
        nothing changed and no window ended)."""
        stored = self._stored_views()
        if all(r.end > now for r in stored):
            return stored
        return ReservationCalendar(stored, now).reservations

    def _stored_views(self) -> tuple[ReservationView, ...]:
        if self._views is None:
            live = sorted(self.live.values(), key=lambda r: (r.start, r.name))
            self._views = tuple(r.policy_view() for r in live)
        return self._views

    def _current(self, now: float) -> dict[str, Reservation]:
        """The records as the calendar sees them at ``now``: ended ones left out, recurring
        ones moved on (copies; ``live`` is unchanged)."""
        out: dict[str, Reservation] = {}
        for name, r in self.live.items():
            if r.end > now:
                out[name] = r
            elif r.period:
                moved = dataclasses.replace(r, view=None)
                moved.advance(now)
                out[name] = moved
        return out

    def check_job(self, name: str, user: str, account: str) -> str | None:
        """Why a job of ``user``/``account`` may not name reservation ``name`` (None: it may)."""
        current = self._current(self.clock())
        r = current.get(name)
        if r is None:
            known = ", ".join(sorted(current)) or "none"
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
        return self.calendar(at).per_node(at)

    def maintenance_now(self) -> dict[str, frozenset[int]]:
        """Node name -> its GPUs under a MAINT window open now (free to no one)."""
        return node_bookings.maintenance_now(self.calendar())

    def on_nodes(self, names: Iterable[str]) -> dict[str, NodeBookings]:
        """The bookings of the nodes ``names`` that have any, now and next."""
        return node_bookings.on_nodes(self.calendar(), self.clock(), names)

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
        """Every future start and end of the open and upcoming windows, as of the clock (the
        reservation clock wakes the scheduler for a pass then)."""
        return self.calendar().edges()

    def advance(self, now: float) -> list[str]:
        """Write what the calendar says of ``now`` (the periodic tick calls this, nothing
        else): recurring reservations whose window ended move to their next one, ended ones
        are forgotten and their pending jobs held, open PURGE_COMP ones whose jobs have all
        ended are deleted; returns the names purged. How each window that ended was spent is
        recorded first (``gacct --summary``). Commit, then swap: the holds are committed
        first, then the reservations written, and each replaces what memory holds only once
        written; a failed write raises, and the next step does what is left."""
        live = dict(self.live)
        moved: list[Reservation] = []
        ended: set[str] = set()
        for name, r in self.live.items():
            if r.period and r.end <= now:
                moved.append(dataclasses.replace(r, view=None))
                moved[-1].advance(now)
            elif r.end <= now:
                del live[name]
                ended.add(name)
        purged = [
            r.name
            for r in live.values()
            if PURGE_COMP in r.flags and r.start <= now and self._completed(r)
        ]
        spent = [self.live[n] for n in sorted(ended)] + [self.live[r.name] for r in moved]
        if spent:  # how the windows that ended were spent (gacct --summary)
            self.store.record_usage([window_usage(r, self._usage(r, r.end)) for r in spent])
        if not self._swept:  # first step: also those that ended while the scheduler was down
            self._hold_orphans(None, live)
            self._swept = True
        elif ended:
            self._hold_orphans(ended, live, "has ended")
        for r in moved:
            self.store.save(r)
            self.live[r.name] = r
        for name in purged:
            self.store.delete(name)
            del self.live[name]
        for name in ended:
            del self.live[name]
        if moved or ended or purged:
            self._changed()
        return purged

    def usage(self, name: str) -> Usage:
        """How the GPU-time booked so far in the current window was spent."""
        return self._usage(self.get(name), self.clock())

    def _usage(self, r: Reservation, now: float) -> Usage:
        """How ``r``'s window was spent up to ``now`` (at most its end)."""
        return spent(r, now, [*self.model.jobs.values(), *self.stored_jobs.ended(r.start)])

    def give_back(self, name: str, now: float, mails: Sequence[BookingMail] = ()) -> Reservation:
        """Record that the no-show rule gave reservation ``name``'s current window back at
        ``now`` (``core/noshow.py``), queueing ``mails`` to its owners in the same
        transaction; committed, then swapped in."""
        r = dataclasses.replace(self.live[name], given_back=now, view=None)
        self.store.save(r, mails, now)
        self.live[name] = r
        self._changed()
        return r

    def _completed(self, r: Reservation) -> bool:
        """Whether some job of ``r`` has run and none is pending or active."""
        name = r.name
        if any(j.spec.reservation == name for j in self.model.jobs.values()):
            return False
        return any(j.spec.reservation == name for j in self.stored_jobs.ended(r.start))

    def _hold_orphans(
        self, names: set[str] | None, live: Mapping[str, Reservation], what: str = "is gone"
    ) -> None:
        """Hold the pending jobs that name a reservation of ``names`` (None: any reservation
        not in ``live``), as SLURM does: reason ``ReservationDeleted`` until released (once a
        reservation of that name exists again) or cancelled. New records, committed, then
        swapped in: a failed commit raises and holds none in memory."""
        held: list[JobRecord] = []
        events: list[JobEvent] = []
        now = self.clock()
        for job in self.model.jobs.values():
            name = job.spec.reservation
            if job.state is not JobState.PENDING or not name or job.held:
                continue
            if name in live if names is None else name not in names:
                continue
            job = dataclasses.replace(job, held=RESERVATION_HOLD)
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
