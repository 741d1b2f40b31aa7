"""Discrete-event simulation of a cluster running a policy over a trace (no sleeping).

Events are job arrivals and job ends (completion, or the kill at the time limit). After the
events of one instant the simulator takes a snapshot and calls the policy, as the daemon
does after a trigger; it skips the pass when it cannot matter (nothing pending, or only
arrivals while no GPU is free and no running job is preemptible). Placements start at once
(no launch latency). A preempted job stops at once and goes back to the queue with its
original submission time; the next pass at the same instant may place the job that preempted
it. A checkpointable job keeps its progress and its attained service (GPU-seconds over all
attempts, which the policy sees) and pays ``restart_cost`` seconds at every restart; any
other job loses its progress. The time limit bounds a checkpointable job's run time over
all its attempts (so preemption neither saves a job from its limit nor costs it one), and
each attempt of any other job. Usage for fair share is fed into a ``UsageLedger`` at every start and
end, and republished to the policy every ``config.priority_period``, as the daemon does.
Job objects are kept between snapshots and every snapshot carries a ``PendingDelta`` against
the previous one, so policies update their cached queue order in O(change).

Reservations (``bookings.read_bookings``) are seen by the policy as the daemon's passes see
them (``Snapshot.reservations``, honoured by the ``ReservationGate`` that ``make_policy``
wraps every policy in); their window starts and ends are events too, recurring windows move
on at their end, and a job in a reservation is killed at its window's end (not FLEX), as the
daemon launches it with a clipped limit. Recurring windows stop producing events four weeks
after the last job event. The result counts the booked GPU-time and how much of it ran jobs of
the reservation (owners) and other jobs (lent). The windows come from the same pure
``ReservationCalendar`` the daemon's passes use, and the window clip from the placement's
``deadline``, as the daemon applies it.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from rota.scheduler.cluster.reservation import Reservation
from rota.scheduler.policy import Policy
from rota.scheduler.policy.calendar import ReservationCalendar, current
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.snapshot import (
    GpuView,
    NodeView,
    PendingDelta,
    PendingJob,
    RunningJob,
    Snapshot,
)
from rota.scheduler.policy.usage import UsageLedger
from rota.scheduler.sim.trace import TraceJob

_END, _EDGE, _ARRIVE = 0, 1, 2  # ends first at one instant, so freed GPUs are seen by arrivals
HORIZON = 28 * 86_400.0  # recurring windows make events this long after the last job event


@dataclass(slots=True)
class JobRecord:
    """What happened to one trace job."""

    job: TraceJob
    run_time: float  # how long the last attempt ran (capped by the time limit and window)
    full_run: float = 0.0  # how long an attempt runs outside a window (capped by the limit)
    need: float = 0.0  # how long the current attempt would run without limit or window
    start: float = -1.0
    end: float = -1.0
    timed_out: bool = False
    attempts: int = 0
    gpu_seconds: float = 0.0  # over all attempts
    done: float = 0.0  # work kept from preempted attempts (checkpointable jobs)
    served: float = 0.0  # run time that counts: all attempts if checkpointable, else the last
    preempted_at: list[float] = field(default_factory=list)

    def plan_attempt(self, limit: float, restart_cost: float) -> None:
        """Set ``need`` and ``full_run`` for the next attempt under ``limit``, which bounds a
        checkpointable job's run time over all its attempts (as when it never stopped)."""
        restart = restart_cost if self.done > 0 else 0.0
        self.need = self.job.duration - self.done + restart
        left = max(0.0, limit - self.served) if self.job.checkpointable else limit
        self.full_run = min(self.need, left)


@dataclass(slots=True)
class SimResult:
    """Per-job records, cluster size and the number of passes run."""

    records: list[JobRecord]
    total_gpus: int
    passes: int
    preemptions: int
    unfinished: list[int] = field(default_factory=list)
    booked_gpu_seconds: float = 0.0  # reserved GPUs x window time, up to the last end
    owner_gpu_seconds: float = 0.0  # of that, run by the reservations' own jobs
    lent_gpu_seconds: float = 0.0  # ... and by other jobs


def simulate(
    jobs: list[TraceJob],
    policy: Policy,
    *,
    nodes: int,
    gpus_per_node: int,
    reservations: Sequence[Reservation] = (),
    restart_cost: float = 0.0,
) -> SimResult:
    """Run ``jobs`` (with derived limits) through ``policy`` on ``nodes`` x ``gpus_per_node``.

    A preempted checkpointable job keeps its progress and pays ``restart_cost`` seconds on
    every later attempt.

    Snapshots carry the policy's config. Jobs get their ``true_duration`` when the policy
    reads it (``sjf-oracle``). Jobs that need more nodes than the cluster has are never placed
    and are listed in ``unfinished``. ``reservations`` are not changed.
    """
    cfg = policy.config
    oracle = policy.reads_true_durations
    node_views = tuple(
        NodeView(f"node{i:04d}", tuple(GpuView(g) for g in range(gpus_per_node)))
        for i in range(nodes)
    )
    records: dict[int, JobRecord] = {}
    events: list[tuple[float, int, int, int]] = []  # (time, kind, job id, attempt)
    for traced in jobs:
        rec = records[traced.id] = JobRecord(traced, 0.0)
        rec.plan_attempt(cfg.limit_of(traced.time_limit or 0.0), restart_cost)
        heapq.heappush(events, (traced.submit_time, _ARRIVE, traced.id, 0))
    stored = tuple(r.policy_view() for r in reservations)  # the calendar moves them on
    for i, view in enumerate(stored):
        heapq.heappush(events, (view.start, _EDGE, i, 0))
    last_job_event = 0.0
    spent = _Spent(tuple(reservations))
    named = any(j.reservation for j in jobs)  # else the gate need not scan the queue
    pending: dict[int, PendingJob] = {}
    running: dict[int, RunningJob] = {}
    ledger = UsageLedger(cfg.usage_half_life)
    usage = ledger.view(0.0)
    published = -cfg.priority_period
    free = nodes * gpus_per_node
    preemptible = 0
    passes = preemptions = 0
    version = 0  # of the last snapshot; ``added``/``removed``: pending changes since
    added: list[PendingJob] = []
    removed: list[int] = []

    def stop(job_id: int, now: float) -> RunningJob:
        nonlocal free, preemptible
        run = running.pop(job_id)
        gpus = sum(len(a.gpu_indices) for a in run.allocations)
        free += gpus
        preemptible -= run.preemptible or run.checkpointable
        ledger.stop(run.user, run.account, gpus, now)
        records[job_id].gpu_seconds += gpus * (now - run.start_time)
        spent.add(run, now)
        return run

    while events:
        now = events[0][0]
        freed = False
        while events and events[0][0] == now:
            _, kind, job_id, attempt = heapq.heappop(events)
            if kind == _EDGE:
                r = current(stored[job_id], now)
                edge = 0.0 if r is None else r.start if r.start > now else r.end
                if (
                    r is not None
                    and edge > now
                    and (not r.period or edge <= last_job_event + HORIZON)
                ):
                    heapq.heappush(events, (edge, _EDGE, job_id, 0))
                freed = True  # a window opened or closed: a pass may start jobs
                continue
            last_job_event = now
            rec = records[job_id]
            if kind == _ARRIVE:
                pending[job_id] = job_view = _pending(rec, gpus_per_node, cfg, oracle)
                added.append(job_view)
                continue
            if attempt != rec.attempts or job_id not in running:
                continue  # an attempt that was preempted
            ended = stop(job_id, now)
            rec.end = now
            rec.timed_out = rec.run_time < rec.need
            rec.served = rec.served + rec.run_time if rec.job.checkpointable else rec.run_time
            ledger.finish(
                ended.user,
                ended.account,
                rec.run_time,
                ended.time_limit,
                rec.job.time_limit is not None,
            )
            freed = True
        if not pending or not (freed or free > 0 or preemptible):
            continue
        views = ReservationCalendar(stored, now).reservations
        if now - published >= cfg.priority_period:
            usage, published = ledger.view(now), now
        while True:
            version += 1
            snapshot = Snapshot(
                now=now,
                nodes=node_views,
                pending=tuple(pending.values()),
                running=tuple(running.values()),
                version=version,
                usage=usage,
                config=cfg,
                full_reasons=False,
                delta=PendingDelta(version - 1, tuple(removed), tuple(added)),
                reservations=views,
                names_reservation=None if named else False,
            )
            added.clear()
            removed.clear()
            plan = policy.decide(snapshot)
            passes += 1
            for placement in plan.placements:
                job = pending.pop(placement.job_id)
                removed.append(job.id)
                rec = records[job.id]
                rec.attempts += 1
                if rec.start < 0:
                    rec.start = now
                limit = job.time_limit
                if placement.deadline:  # killed at its reservation window's end
                    limit = min(limit, placement.deadline - now)
                rec.run_time = min(rec.full_run, limit)
                gpus = sum(len(a.gpu_indices) for a in placement.allocations)
                free -= gpus
                preemptible += job.preemptible or job.checkpointable
                running[job.id] = RunningJob(
                    id=job.id,
                    user=job.user,
                    account=job.account,
                    allocations=placement.allocations,
                    start_time=now,
                    time_limit=limit,
                    preemptible=job.preemptible,
                    true_duration=rec.run_time if oracle else None,
                    reservation=job.reservation,
                    checkpointable=job.checkpointable,
                    attained=rec.gpu_seconds,
                    preempted_at=tuple(rec.preempted_at),
                    submit_time=job.submit_time,
                )
                ledger.start(job.user, job.account, gpus, now)
                heapq.heappush(events, (now + rec.run_time, _END, job.id, rec.attempts))
            for job_id in plan.preemptions:
                run = stop(job_id, now)
                preemptions += 1
                rec = records[job_id]
                if rec.job.checkpointable:
                    ran = now - run.start_time
                    rec.done += max(0.0, ran - (rec.need - (rec.job.duration - rec.done)))
                    rec.served += ran
                rec.preempted_at.append(now)
                rec.plan_attempt(cfg.limit_of(rec.job.time_limit or 0.0), restart_cost)
                pending[job_id] = job_view = _pending(rec, gpus_per_node, cfg, oracle)
                added.append(job_view)
            if not plan.preemptions:
                break
    unfinished = [i for i, r in records.items() if r.end < 0]
    until = max((r.end for r in records.values()), default=0.0)
    return SimResult(
        [records[j.id] for j in jobs],
        nodes * gpus_per_node,
        passes,
        preemptions,
        unfinished,
        booked_gpu_seconds=spent.booked(until),
        owner_gpu_seconds=spent.owners,
        lent_gpu_seconds=spent.lent,
    )


class _Spent:
    """GPU-time of reservation windows, and who ran on the reserved GPUs during them."""

    def __init__(self, reservations: tuple[Reservation, ...]) -> None:
        self.reservations = reservations  # as given: their windows from the first one on
        self.owners = 0.0
        self.lent = 0.0

    def add(self, run: RunningJob, now: float) -> None:
        """Count the time ``run`` held reserved GPUs inside their windows, up to ``now``."""
        for r in self.reservations:
            cells = r.cells()
            held = sum((a.node, g) in cells for a in run.allocations for g in a.gpu_indices)
            if not held:
                continue
            inside = sum(
                min(end, now) - max(start, run.start_time)
                for start, end in r.windows(run.start_time, now)
            )
            if run.reservation == r.name:
                self.owners += held * inside
            else:
                self.lent += held * inside

    def booked(self, until: float) -> float:
        return sum(
            r.gpu_count() * (min(end, until) - start)
            for r in self.reservations
            for start, end in r.windows(0.0, until)
        )


def _pending(rec: JobRecord, gpus_per_node: int, cfg: PolicyConfig, oracle: bool) -> PendingJob:
    job = rec.job
    width = max(1, -(-job.gpus // gpus_per_node))
    return PendingJob(
        id=job.id,
        user=job.user,
        account=job.account,
        submit_time=job.submit_time,
        time_limit=job.time_limit if job.time_limit is not None else cfg.default_time_limit,
        gpus=-(-job.gpus // width),
        nodes=width,
        default_limit=job.time_limit is None,
        true_duration=rec.full_run if oracle else None,
        reservation=job.reservation,
        checkpointable=job.checkpointable,
        attained=rec.gpu_seconds,
    )
