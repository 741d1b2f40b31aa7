"""``gqueue --explain ID``: a pending job's priority factors, rank and blocking reason."""

from __future__ import annotations

from dataclasses import dataclass

from rota.scheduler.policy import multifactor
from rota.scheduler.policy.priority import Factor, PriorityContext
from rota.scheduler.policy.snapshot import PendingJob, Snapshot

ORDER_BY = {
    "rota": "multifactor priority",
    "sjf-oracle": "true duration, shortest first",
}  # every other policy: submission time


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a pending job waits.

    ``factors`` are rota's multifactor terms (the last one, ``job_priority``, is the job's own
    priority times its weight) and ``priority`` is their sum, under the ``rota`` policy; other
    policies order by what ``order_by`` says, so both are empty (0) there. ``rank`` is the job's 1-based place
    in the policy's order. ``reason`` is None and ``starts_now`` True when this pass would
    start it; ``est_start`` is the estimated start when the pass computed one.
    """

    job_id: int
    policy: str
    priority: float
    factors: tuple[Factor, ...]
    rank: int
    starts_now: bool
    reason: str | None
    est_start: float | None
    order_by: str


def explain(snapshot: Snapshot, job_id: int, policy: str = "rota") -> Explanation:
    """Explain pending job ``job_id`` under ``policy``; KeyError if it is not pending."""
    from rota.scheduler.policy import get_policy

    job = next((j for j in snapshot.pending if j.id == job_id), None)
    if job is None:
        raise KeyError(job_id)
    factors: tuple[Factor, ...] = ()
    if policy == "rota":
        weight = snapshot.config.weights.job_priority
        own = Factor("job_priority", float(job.priority), weight)
        factors = (*PriorityContext(snapshot).factors(job), own)
    plan = get_policy(policy)(snapshot)
    order = _order(snapshot, policy)
    starts = any(p.job_id == job_id for p in plan.placements)
    return Explanation(
        job_id=job_id,
        policy=policy,
        priority=sum(f.contribution for f in factors),
        factors=factors,
        rank=next(i for i, j in enumerate(order, 1) if j.id == job_id),
        starts_now=starts,
        reason=None if starts else plan.reasons.get(job_id),
        est_start=plan.est_start.get(job_id),
        order_by=ORDER_BY.get(policy, "submission time"),
    )


def _order(snapshot: Snapshot, policy: str) -> list[PendingJob]:
    if policy == "rota":
        return multifactor.ordered(snapshot)
    if policy == "sjf-oracle":
        from rota.scheduler.policy.sjf_oracle import ordered

        return ordered(snapshot)
    return sorted(snapshot.pending, key=lambda j: (j.submit_time, j.id))
