"""Discrete-event simulation of a cluster running a policy over a trace (no sleeping).

Events are job arrivals and job ends (completion, or the kill at the time limit). After the
events of one instant the simulator takes a snapshot and calls the policy, as the daemon
does after a trigger; it skips the pass when it cannot matter (nothing pending, or only
arrivals while no GPU is free and no running job is preemptible). Placements start at once
(no launch latency). A preempted job stops at once, loses its progress and goes back to the
queue with its original submission time; the next pass at the same instant may place the
job that preempted it. Usage for fair share is fed into a ``UsageLedger`` at every start and
end, and republished to the policy every ``config.priority_period``, as the daemon does.
Job objects are kept between snapshots and every snapshot carries a ``PendingDelta`` against
the previous one, so policies update their cached queue order in O(change).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from rota.scheduler.policy import Policy
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

_END, _ARRIVE = 0, 1  # ends first at one instant, so freed GPUs are seen by arrivals


@dataclass(slots=True)
class JobRecord:
    """What happened to one trace job."""

    job: TraceJob
    run_time: float  # how long the last attempt ran (capped by the time limit)
    start: float = -1.0
    end: float = -1.0
    timed_out: bool = False
    attempts: int = 0
    gpu_seconds: float = 0.0  # over all attempts


@dataclass(slots=True)
class SimResult:
    """Per-job records, cluster size and the number of passes run."""

    records: list[JobRecord]
    total_gpus: int
    passes: int
    preemptions: int
    unfinished: list[int] = field(default_factory=list)


def simulate(
    jobs: list[TraceJob],
    policy: Policy,
    *,
    nodes: int,
    gpus_per_node: int,
) -> SimResult:
    """Run ``jobs`` (with derived limits) through ``policy`` on ``nodes`` x ``gpus_per_node``.

    Snapshots carry the policy's config. Jobs get their ``true_duration`` when the policy
    reads it (``sjf-oracle``). Jobs that need more nodes than the cluster has are never placed
    and are listed in ``unfinished``.
    """
    cfg = policy.config
    oracle = policy.reads_true_durations
    node_views = tuple(
        NodeView(f"node{i:04d}", tuple(GpuView(g) for g in range(gpus_per_node)))
        for i in range(nodes)
    )
    records: dict[int, JobRecord] = {}
    events: list[tuple[float, int, int, int]] = []  # (time, kind, job id, attempt)
    for job in jobs:
        limit = cfg.limit_of(job.time_limit or 0.0)
        records[job.id] = JobRecord(job, min(job.duration, limit))
        heapq.heappush(events, (job.submit_time, _ARRIVE, job.id, 0))
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
        preemptible -= run.preemptible
        ledger.stop(run.user, run.account, gpus, now)
        records[job_id].gpu_seconds += gpus * (now - run.start_time)
        return run

    while events:
        now = events[0][0]
        freed = False
        while events and events[0][0] == now:
            _, kind, job_id, attempt = heapq.heappop(events)
            rec = records[job_id]
            if kind == _ARRIVE:
                pending[job_id] = job_view = _pending(rec, gpus_per_node, cfg, oracle)
                added.append(job_view)
                continue
            if attempt != rec.attempts or job_id not in running:
                continue  # an attempt that was preempted
            run = stop(job_id, now)
            rec.end = now
            rec.timed_out = rec.run_time < rec.job.duration
            ledger.finish(
                run.user, run.account, rec.run_time, run.time_limit, rec.job.time_limit is not None
            )
            freed = True
        if not pending or not (freed or free > 0 or preemptible):
            continue
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
                gpus = sum(len(a.gpu_indices) for a in placement.allocations)
                free -= gpus
                preemptible += job.preemptible
                running[job.id] = RunningJob(
                    id=job.id,
                    user=job.user,
                    account=job.account,
                    allocations=placement.allocations,
                    start_time=now,
                    time_limit=job.time_limit,
                    preemptible=job.preemptible,
                    true_duration=rec.run_time if oracle else None,
                )
                ledger.start(job.user, job.account, gpus, now)
                heapq.heappush(events, (now + rec.run_time, _END, job.id, rec.attempts))
            for job_id in plan.preemptions:
                stop(job_id, now)
                preemptions += 1
                pending[job_id] = job_view = _pending(records[job_id], gpus_per_node, cfg, oracle)
                added.append(job_view)
            if not plan.preemptions:
                break
    unfinished = [i for i, r in records.items() if r.end < 0]
    return SimResult(
        [records[j.id] for j in jobs], nodes * gpus_per_node, passes, preemptions, unfinished
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
        true_duration=rec.run_time if oracle else None,
    )
