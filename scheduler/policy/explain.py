"""``gqueue --explain ID``: a pending job's priority factors, rank and blocking reason
(computed by ``Policy.explain``)."""

from __future__ import annotations

from dataclasses import dataclass

from rota.scheduler.policy.priority import Factor


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a pending job waits.

        ``factors`` are the terms of the policy's priority (rota's multifactor terms, the last
        one, ``job_priority``, being the job's own priority times its weight) and ``priority`` is
        their sum; policies that order by something else (``order_by`` says what) have none, so
        both are empty (0) there. ``rank`` is the job's 1-based place in the policy's order.
        ``reason`` is None and ``starts_now`` True when this pass would start it; ``est_start``
        is the estimated start when the pass computed one; ``detail`` says what no registered node
    meets when the reason is ``BadConstraints``. ``reservation`` names the
        reservation that holds the job, and its window, in words ("" when none).
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
    reservation: str = ""
    attained: str = ""
    detail: str = ""  # what no node could ever meet (``BadConstraints``), naming the field
