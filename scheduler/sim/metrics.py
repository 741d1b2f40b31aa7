"""Summary figures of a simulation.

- JCT: end - submission; queueing delay: JCT - run time (of the last attempt; of every
  attempt for checkpointable jobs, which keep their progress).
- p99 JCT: nearest-rank; ``preempted_jobs``: jobs preempted at least once.
- makespan: last end - first submission.
- GPU utilisation: GPU-seconds run (all attempts) / (cluster GPUs x makespan).
- Jain's fairness across accounts: over x_a = mean of (run time / JCT) of account a's jobs
  (1 = never waited); (sum x)^2 / (n sum x^2), 1 = equal treatment.
- Reservations (``--reservations``): GPU-hours booked up to the last end, and the shares of
  them run by the reservations' own jobs and lent to others (the rest sat idle).
"""

from __future__ import annotations

from collections import defaultdict

from rota.scheduler.sim.engine import SimResult

FIELDS = (
    "jobs",
    "avg_jct",
    "avg_queue",
    "p50_queue",
    "p95_queue",
    "p99_queue",
    "p99_jct",
    "makespan",
    "utilisation",
    "jain_accounts",
    "timeouts",
    "preemptions",
    "preempted_jobs",
    "unfinished",
    "passes",
    "reserved_gpu_hours",
    "reserved_owner_share",
    "reserved_lent_share",
)


def summarise(result: SimResult) -> dict[str, float]:
    """The figures in ``FIELDS`` (seconds for times, fractions for ratios)."""
    done = [r for r in result.records if r.end >= 0]
    jct = [r.end - r.job.submit_time for r in done]
    queue = sorted(max(0.0, r.end - r.served - r.job.submit_time) for r in done)
    first = min((r.job.submit_time for r in result.records), default=0.0)
    makespan = max((r.end for r in done), default=first) - first
    per_account: defaultdict[str, list[float]] = defaultdict(list)
    for r, t in zip(done, jct, strict=True):
        per_account[r.job.account].append(r.served / t if t > 0 else 1.0)
    means = [sum(v) / len(v) for v in per_account.values()]
    squares = sum(x * x for x in means)
    gpu_seconds = sum(r.gpu_seconds for r in result.records)
    booked = result.booked_gpu_seconds
    return {
        "jobs": float(len(result.records)),
        "avg_jct": _mean(jct),
        "avg_queue": _mean(queue),
        "p50_queue": _quantile(queue, 0.50),
        "p95_queue": _quantile(queue, 0.95),
        "p99_queue": _quantile(queue, 0.99),
        "p99_jct": _quantile(sorted(jct), 0.99),
        "makespan": makespan,
        "utilisation": gpu_seconds / (result.total_gpus * makespan) if makespan > 0 else 0.0,
        "jain_accounts": sum(means) ** 2 / (len(means) * squares) if squares > 0 else 1.0,
        "timeouts": float(sum(r.timed_out for r in done)),
        "preemptions": float(result.preemptions),
        "preempted_jobs": float(sum(bool(r.preempted_at) for r in result.records)),
        "unfinished": float(len(result.unfinished)),
        "passes": float(result.passes),
        "reserved_gpu_hours": booked / 3600.0,
        "reserved_owner_share": result.owner_gpu_seconds / booked if booked else 0.0,
        "reserved_lent_share": result.lent_gpu_seconds / booked if booked else 0.0,
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _quantile(ordered: list[float], q: float) -> float:
    """Nearest-rank quantile of sorted values."""
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]
