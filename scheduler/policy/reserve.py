"""Reservations: a gate around any policy that keeps booked GPUs for the jobs that booked them.

``ReservationGate`` wraps a policy. Without reservations in the snapshot and without pending
jobs naming one it hands the snapshot to the wrapped policy unchanged. Otherwise a pass is a
sequence of sub-passes, each on the same snapshot with some GPUs made not allocatable and the
placements of the sub-passes before it added as running jobs:

1. per open reservation (by name): the jobs naming it that it allows, on its GPUs only, their
   time limits clipped to the window's end; each placement carries that end as its
   ``deadline`` (the daemon and the simulator end the job with TIMEOUT then). FLEX: no
   clipping, and its jobs still waiting join pass 2, as do its jobs before its window. When such a job waits for resources while
   jobs that do not belong to the reservation (borrowers: preemptible jobs and grun
   sessions) hold its GPUs, the borrowers are preempted, most recently started first, until
   the waiting jobs' GPUs are covered.
2. everyone else (the wrapped policy, whose caches stay warm): every GPU of an open or
   upcoming reservation is hidden.
3. short jobs before upcoming windows: for each upcoming start T (earliest first), the jobs
   still waiting for resources whose time limit (or the default) ends after the previous
   start and by T, first on the reserved GPUs free until T only, then those still waiting on
   those GPUs together with the GPUs no window holds (a gang across a booked and a free node,
   or a job needing both kinds of one node). In that second sub-pass the jobs pass 2 gave an
   estimated start come along so that their GPUs stay kept for them; their own placements
   there are dropped. A job never starts on reserved GPUs if its time limit reaches into a
   window, and a window far ahead blocks no job that ends before it.
4. lending: preemptible jobs and grun sessions (preemptible there: borrowers below) still
   waiting for resources, on the idle GPUs of open, lending, non-MAINT reservations that have
   no job of their own waiting; a window the no-show
   rule lent (``lent_to_all``) also to any job whose time limit ends within the window.

Reasons: a job naming an unknown (deleted or ended) reservation waits with
``ReservationDeleted``, one naming a reservation that is not open yet with ``Reservation``
(and one not allowed by it the same); a job of pass 2 left waiting for resources that would
fit the GPUs free now if reserved ones counted (or whose constraints only reserved GPUs
meet) waits with ``ReqNodeNotAvail``. A MAINT reservation blocks everyone but the jobs naming it.

Estimated starts (``gqueue --start``) follow the windows: a job waiting for its reservation
starts at its window's start; a job the wrapped policy gave no estimate that waits with
``ReqNodeNotAvail`` or that only reserved GPUs could ever hold, at the first window end or
running job's end after which it fits outside every window for its whole time limit (a lower
bound: the queue ahead of it is not counted).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter

from rota.scheduler.policy import reasons
from rota.scheduler.policy.base import Policy
from rota.scheduler.policy.calendar import ReservationCalendar
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.explain import Explanation
from rota.scheduler.policy.fit import node_matches
from rota.scheduler.policy.reserve_cells import Cell, clip, fits_free, free_until, mask
from rota.scheduler.policy.snapshot import (
    PendingJob,
    Placement,
    Plan,
    ReservationView,
    RunningJob,
    Snapshot,
)

_WAITING = frozenset(
    {reasons.RESOURCES, reasons.PRIORITY, reasons.BAD_CONSTRAINTS, reasons.NODE_DOWN}
)
_RESERVATION = attrgetter("reservation")


class ReservationGate:
    """A ``Policy`` that honours ``Snapshot.reservations`` around the policy it wraps.

    ``side`` builds a fresh instance of the wrapped policy for the small sub-passes, so that
    the wrapped instance's caches follow only the main pass.
    """

    def __init__(self, inner: Policy, side: Callable[[], Policy]) -> None:
        self.inner = inner
        self._side = side

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def config(self) -> PolicyConfig:
        return self.inner.config

    @property
    def reads_true_durations(self) -> bool:
        return self.inner.reads_true_durations

    def order(self, snapshot: Snapshot) -> list[PendingJob]:
        return self.inner.order(snapshot)

    def decide(self, snapshot: Snapshot) -> Plan:
        if not _gated(snapshot):
            return self.inner.decide(snapshot)
        return _Pass(snapshot, self.inner, self._side).run()

    def priorities(self, snapshot: Snapshot, jobs: Sequence[PendingJob]) -> dict[int, float]:
        return self.inner.priorities(snapshot, jobs)

    def explain(self, snapshot: Snapshot, job_id: int) -> Explanation:
        base = self.inner.explain(snapshot, job_id)
        if not _gated(snapshot):
            return base
        plan = self.decide(snapshot)
        starts = any(p.job_id == job_id for p in plan.placements)
        job = next(j for j in snapshot.pending if j.id == job_id)
        reason = None if starts else plan.reasons.get(job_id)
        return dataclasses.replace(
            base,
            starts_now=starts,
            reason=reason,
            est_start=plan.est_start.get(job_id),
            reservation=ReservationCalendar(snapshot.reservations, snapshot.now).blocking(
                job, reason
            ),
        )


def _gated(snapshot: Snapshot) -> bool:
    """Whether reservations concern this pass."""
    if snapshot.reservations:
        return True
    named = snapshot.names_reservation
    return any(map(_RESERVATION, snapshot.pending)) if named is None else named


class _Pass:
    """One gated pass (see the module docstring)."""

    def __init__(self, snapshot: Snapshot, inner: Policy, side: Callable[[], Policy]) -> None:
        self.snapshot = snapshot
        self.inner = inner
        self.side = side
        self.now = snapshot.now
        self.cfg = snapshot.config
        self.calendar = ReservationCalendar(snapshot.reservations, self.now)
        self.active = self.calendar.open
        self.upcoming = self.calendar.upcoming
        self.running: list[RunningJob] = list(snapshot.running)
        self.placements: list[Placement] = []
        self.placed: set[int] = set()
        self.preempted: list[int] = []
        self.preempted_why: dict[int, str] = {}
        self.why: dict[int, str] = {}
        self.est: dict[int, float] = {}
        self.maint_cells = self.calendar.maint_cells()

    def run(self) -> Plan:
        own: dict[str, list[PendingJob]] = {r.name: [] for r in self.active}
        general: list[PendingJob] = []
        for job in self.snapshot.pending:
            if not job.reservation:
                general.append(job)
                continue
            if job.blocked is not None:
                self.why[job.id] = job.blocked
                continue
            r = self.calendar.get(job.reservation)
            if r is None:
                self.why[job.id] = reasons.RESERVATION_DELETED
            elif not r.allows(job.user, job.account):
                self.why[job.id] = reasons.RESERVATION
            elif r.active(self.now):
                deadline = self.calendar.deadline(r.name)
                own[r.name].append(clip(job, deadline - self.now, self.cfg) if deadline else job)
            elif r.flex:
                general.append(job)  # FLEX: may start before the window, on other GPUs
            else:
                self.why[job.id] = reasons.RESERVATION
        waiting_owners: set[str] = set()
        for r in self.active:
            if own[r.name] and self._own_pass(r, own[r.name]):
                waiting_owners.add(r.name)
            if r.flex:  # FLEX: jobs its GPUs cannot start now may spill onto other GPUs
                general.extend(j for j in own[r.name] if self._waits(j))
        self._general_pass(general)
        self._gap_passes(general)
        self._lend_pass(general, waiting_owners)
        self._mark_reserved(general)
        self._estimate(general)
        placed, stopped = tuple(self.placements), tuple(self.preempted)
        return Plan(placed, stopped, self.why, self.est, self.preempted_why)

    # ---------------------------------------------------------------- sub-passes

    def _sub(
        self,
        policy: Policy,
        jobs: list[PendingJob],
        usable: Callable[[Cell], bool],
        deadline: float = 0.0,
    ) -> Plan:
        """Decide ``jobs`` on the GPUs ``usable`` keeps; record placements (each with
        ``deadline``) and reasons."""
        plan = self._decide(policy, jobs, usable)
        self._record(plan, jobs, deadline)
        return plan

    def _decide(
        self, policy: Policy, jobs: list[PendingJob], usable: Callable[[Cell], bool]
    ) -> Plan:
        snap = dataclasses.replace(
            self.snapshot,
            nodes=tuple(mask(n, usable) for n in self.snapshot.nodes),
            pending=tuple(jobs),
            running=tuple(self.running),
            delta=None,
            reservations=(),
        )
        return policy.decide(snap)

    def _record(self, plan: Plan, jobs: Iterable[PendingJob], deadline: float = 0.0) -> None:
        by_id = {j.id: j for j in jobs}
        for p in plan.placements:
            job = by_id[p.job_id]
            self.placements.append(dataclasses.replace(p, deadline=deadline) if deadline else p)
            self.placed.add(job.id)
            self.why.pop(job.id, None)
            self.est.pop(job.id, None)
            self.running.append(
                RunningJob(
                    id=job.id,
                    user=job.user,
                    account=job.account,
                    allocations=p.allocations,
                    start_time=self.now,
                    time_limit=self.cfg.limit_of(job.time_limit),
                    priority=job.priority,
                    preemptible=job.preemptible,
                    interactive=job.interactive,
                    qos=job.qos,
                    exclusive=job.exclusive,
                    array_job_id=job.array_job_id,
                    reservation=job.reservation,
                    checkpointable=job.checkpointable,
                    attained=job.attained,
                )
            )
        self.preempted.extend(p for p in plan.preemptions if p not in self.preempted)
        self.preempted_why.update(plan.preempted_why)
        placed = {p.job_id for p in plan.placements}
        for job_id, reason in plan.reasons.items():
            if job_id not in placed:
                self.why[job_id] = reason
        for job_id, start in plan.est_start.items():
            if job_id not in placed:
                self.est[job_id] = start

    def _own_pass(self, r: ReservationView, jobs: list[PendingJob]) -> bool:
        """The reservation's own jobs on its GPUs; True when some wait for resources that the
        reservation has (after the borrowers that stand in their way were told to stop)."""
        cells = r.cells()
        if not r.maint:
            cells = frozenset(c for c in cells if c not in self.maint_cells)
        self._sub(self.side(), jobs, cells.__contains__, self.calendar.deadline(r.name))
        widths = sorted((len(idx) for idx in r.gpus.values()), reverse=True)
        waiting = []
        for job in jobs:
            if not self._waits(job):
                continue
            if len(widths) < job.nodes or widths[job.nodes - 1] < job.gpus:
                self.why[job.id] = reasons.BAD_CONSTRAINTS  # larger than the reservation
            elif self.why[job.id] in (reasons.RESOURCES, reasons.PRIORITY):
                waiting.append(job)
        if not waiting:
            return False
        need = sum(j.gpus * j.nodes for j in waiting) - self._idle(cells)
        borrowers = sorted(
            (
                job
                for job in self.running
                if job.reservation != r.name
                and (job.preemptible or job.interactive)
                and not job.stopping
                and job.id not in self.preempted
                and any((a.node, g) in cells for a in job.allocations for g in a.gpu_indices)
            ),
            key=lambda job: -job.start_time,
        )
        for borrower in borrowers:
            if need <= 0:
                break
            self.preempted.append(borrower.id)
            need -= sum((a.node, g) in cells for a in borrower.allocations for g in a.gpu_indices)
        return True

    def _general_pass(self, jobs: list[PendingJob]) -> None:
        hidden = self._hidden()
        self._sub(self.inner, jobs, lambda c: c not in hidden)

    def _gap_passes(self, general: list[PendingJob]) -> None:
        if not self.upcoming:
            return
        until = self.calendar.free_until()
        booked = self.calendar.booked_cells()
        previous = self.now
        for start in sorted({r.start for r in self.upcoming}):
            jobs = [
                j
                for j in general
                if self._waits(j) and previous < self.now + self.cfg.limit_of(j.time_limit) <= start
            ]
            if jobs:
                gap = free_until(start, until)
                self._sub(self.side(), jobs, gap)
                self._span_pass([j for j in jobs if self._waits(j)], general, gap, booked)
            previous = start

    def _span_pass(
        self,
        jobs: list[PendingJob],
        general: list[PendingJob],
        gap: Callable[[Cell], bool],
        booked: frozenset[Cell],
    ) -> None:
        """``jobs`` (all end before the window that closes ``gap``) on the ``gap`` GPUs and
        the GPUs no window holds together; the waiting jobs pass 2 gave an estimated start
        come along, ahead of them where their priority says so, to keep their GPUs, and are
        not placed here. Skipped unless both kinds of GPU have an idle one."""
        if not jobs:
            return
        idle = self._idle_cells()
        if not any(map(gap, idle)) or all(c in booked for c in idle):
            return
        eligible = {j.id for j in jobs}
        holders = [j for j in general if j.id not in eligible and j.id in self.est]
        plan = self._decide(self.side(), [*jobs, *holders], lambda c: c not in booked or gap(c))
        kept = tuple(p for p in plan.placements if p.job_id in eligible)
        self._record(Plan(placements=kept), jobs)

    def _lend_pass(self, general: list[PendingJob], waiting_owners: set[str]) -> None:
        lent: set[Cell] = set()
        for r in self.active:
            if (r.lend or r.lent_to_all) and not r.maint and r.name not in waiting_owners:
                lent |= r.cells()
        lent -= self.maint_cells
        jobs = [j for j in general if (j.preemptible or j.interactive) and self._waits(j)]
        if lent and jobs:
            self._sub(self.side(), jobs, lent.__contains__)
        for r in self.active:  # the no-show rule's loans: any job that ends within the window
            if r.lent_to_all and not r.maint and r.name not in waiting_owners:
                limit, cells = self.cfg.limit_of, r.cells() - self.maint_cells
                jobs = [
                    j for j in general if self._waits(j) and self.now + limit(j.time_limit) <= r.end
                ]
                self._sub(self.side(), jobs, cells.__contains__)

    # ---------------------------------------------------------------- reasons

    def _waits(self, job: PendingJob) -> bool:
        """Whether ``job`` is unplaced and waits for resources; a job a pass left without a
        reason (``Snapshot.full_reasons`` False: the policy stopped early) waits too."""
        if job.id in self.placed:
            return False
        return self.why.get(job.id, reasons.RESOURCES) in _WAITING

    def _hidden(self) -> set[Cell]:
        hidden = set(self.maint_cells)
        for r in (*self.active, *self.upcoming):
            hidden |= r.cells()
        return hidden

    def _idle(self, cells: frozenset[Cell]) -> int:
        idle = self._idle_cells()
        return sum(1 for c in cells if c in idle)

    def _idle_cells(self) -> set[Cell]:
        """Allocatable GPUs of schedulable nodes that no running job (or placement) holds."""
        held = self._held()
        return {
            (n.name, g.index)
            for n in self.snapshot.nodes
            if n.schedulable
            for g in n.gpus
            if g.allocatable and (n.name, g.index) not in held
        }

    def _held(self) -> set[Cell]:
        return {
            (a.node, g)
            for job in self.running
            if job.id not in self.preempted
            for a in job.allocations
            for g in a.gpu_indices
        }

    def _mark_reserved(self, general: list[PendingJob]) -> None:
        """``ReqNodeNotAvail`` for general jobs the hidden GPUs could hold."""
        hidden = self._hidden()
        if not hidden:
            return
        held = self._held()
        for job in general:
            reason = self.why.get(job.id)
            if reason not in _WAITING:
                continue
            if reason in (reasons.BAD_CONSTRAINTS, reasons.NODE_DOWN):
                capable = sum(node_matches(job, n) for n in self.snapshot.nodes if n.schedulable)
                if capable >= job.nodes:
                    self.why[job.id] = reasons.REQ_NODE_NOT_AVAIL
                continue
            if fits_free(job, self.snapshot.nodes, held):
                self.why[job.id] = reasons.REQ_NODE_NOT_AVAIL

    def _estimate(self, general: list[PendingJob]) -> None:
        """Estimated starts that follow the windows (``gqueue --start``): a job waiting for
        its reservation starts at its window; a general job without an estimate from the
        wrapped policy that waits with ``ReqNodeNotAvail`` or that only reserved GPUs could
        ever hold at the first window edge or running job's end after which it fits outside
        every window for its whole time limit (the queue ahead of it not counted)."""
        for job in self.snapshot.pending:
            r = self.calendar.get(job.reservation) if job.reservation else None
            if (
                r is not None
                and r.start > self.now
                and self.why.get(job.id) == reasons.RESERVATION
                and r.allows(job.user, job.account)
            ):
                self.est[job.id] = r.start
        hidden = self._hidden()
        nodes = self.snapshot.nodes
        blocked = [
            j
            for j in general
            if j.id not in self.est
            and (
                self.why.get(j.id) == reasons.REQ_NODE_NOT_AVAIL
                or (  # waits, and only reserved GPUs could ever hold it
                    self._waits(j)
                    and fits_free(j, nodes, set())
                    and not fits_free(j, nodes, hidden)
                )
            )
        ]
        if not blocked:
            return
        held = [
            (
                job.start_time + job.time_limit,
                {(a.node, g) for a in job.allocations for g in a.gpu_indices},
            )
            for job in self.running
            if job.id not in self.preempted
        ]
        windows = [(r.start, r.end, r.cells()) for r in self.calendar.reservations]
        edges = sorted(
            {t for t, _ in held if t > self.now} | {e for s, e, _ in windows if e > self.now}
        )
        for job in blocked:
            limit = self.cfg.limit_of(job.time_limit)
            for t in edges:
                busy = {c for end, cells in held if end > t for c in cells}
                for start, end, cells in windows:
                    if start < t + limit and t < end:
                        busy |= cells
                if fits_free(job, self.snapshot.nodes, busy):
                    self.est[job.id] = t
                    break
