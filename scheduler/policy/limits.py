"""Per-user and per-account limits and job-array ``%`` limits, counted over one pass."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from rota.scheduler.policy import reasons
from rota.scheduler.policy.config import Limits
from rota.scheduler.policy.snapshot import PendingJob, RunningJob


class LimitCounter:
    """GPUs held per user and account and running tasks per array, placements included."""

    def __init__(
        self, limits: Limits, running: Iterable[RunningJob], pending: Iterable[PendingJob]
    ) -> None:
        self.limits = limits
        self.user_gpus: Counter[str] = Counter()
        self.account_gpus: Counter[str] = Counter()
        self.array_tasks: Counter[int] = Counter()
        count_gpus = limits.max_gpus_per_user is not None or limits.max_gpus_per_account is not None
        for job in running:
            if count_gpus:
                gpus = sum(len(a.gpu_indices) for a in job.allocations)
                self.user_gpus[job.user] += gpus
                self.account_gpus[job.account] += gpus
            if job.array_job_id is not None:
                self.array_tasks[job.array_job_id] += 1
        self.over_pending = _over_pending(limits, pending)
        # whether any job can hit a user or account limit (array limits are per job)
        self.active = count_gpus or bool(self.over_pending)

    def check(self, job: PendingJob) -> str | None:
        """The limit reason that keeps ``job`` from starting now, or None."""
        over = self.over_pending.get(job.id)
        if over is not None:
            return over
        if (
            job.array_job_id is not None
            and job.array_task_limit > 0
            and self.array_tasks[job.array_job_id] >= job.array_task_limit
        ):
            return reasons.ARRAY_TASK_LIMIT
        gpus = job.gpus * job.nodes
        cap = self.limits.max_gpus_per_user
        if cap is not None and self.user_gpus[job.user] + gpus > cap:
            return reasons.QOS_MAX_GRES_PER_USER
        cap = self.limits.max_gpus_per_account
        if cap is not None and self.account_gpus[job.account] + gpus > cap:
            return reasons.QOS_MAX_GRES_PER_ACCOUNT
        return None

    def add(self, job: PendingJob) -> None:
        """Count a job placed in this pass."""
        if self.active:
            gpus = job.gpus * job.nodes
            self.user_gpus[job.user] += gpus
            self.account_gpus[job.account] += gpus
        if job.array_job_id is not None:
            self.array_tasks[job.array_job_id] += 1


def _over_pending(limits: Limits, pending: Iterable[PendingJob]) -> dict[int, str]:
    """Jobs beyond a user's or account's pending-job limit (the newest ones wait)."""
    caps = (
        (limits.max_pending_per_user, lambda j: j.user, reasons.QOS_MAX_SUBMIT_PER_USER),
        (limits.max_pending_per_account, lambda j: j.account, reasons.QOS_MAX_SUBMIT_PER_ACCOUNT),
    )
    out: dict[int, str] = {}
    if all(cap is None for cap, _, _ in caps):
        return out
    jobs = sorted(pending, key=lambda j: (j.submit_time, j.id))
    for cap, owner, reason in caps:
        if cap is None:
            continue
        seen: defaultdict[str, int] = defaultdict(int)
        for job in jobs:
            seen[owner(job)] += 1
            if seen[owner(job)] > cap:
                out.setdefault(job.id, reason)
    return out
