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
        self.pending: list[Counter[str]] = [Counter(), Counter()]  # per user, per account
        self.over_pending = _over_pending(limits, pending, self.pending)
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

    def admit_pending(self, new: Iterable[PendingJob]) -> bool:
        """Count newly pending jobs in; False when one takes its user or account past a
        pending-job limit (a full pass must then decide which jobs wait). Counting in jobs
        that are then not taken only makes a later call answer False sooner."""
        limits = self.limits
        caps = (limits.max_pending_per_user, limits.max_pending_per_account)
        if all(cap is None for cap in caps):
            return True
        fits = True
        for job in new:
            for cap, counts, owner in zip(caps, self.pending, (job.user, job.account), strict=True):
                counts[owner] += 1
                fits = fits and (cap is None or counts[owner] <= cap)
        return fits

    def add(self, job: PendingJob) -> None:
        """Count a job placed in this pass."""
        if self.active:
            gpus = job.gpus * job.nodes
            self.user_gpus[job.user] += gpus
            self.account_gpus[job.account] += gpus
        if job.array_job_id is not None:
            self.array_tasks[job.array_job_id] += 1


def _over_pending(
    limits: Limits, pending: Iterable[PendingJob], counts: list[Counter[str]]
) -> dict[int, str]:
    """Jobs beyond a user's or account's pending-job limit (the newest ones wait); ``counts``
    (per user, per account) are filled with the pending jobs of each. O(pending) unless
    someone is over a limit."""
    caps = (
        (limits.max_pending_per_user, lambda j: j.user, reasons.QOS_MAX_SUBMIT_PER_USER),
        (limits.max_pending_per_account, lambda j: j.account, reasons.QOS_MAX_SUBMIT_PER_ACCOUNT),
    )
    out: dict[int, str] = {}
    if all(cap is None for cap, _, _ in caps):
        return out
    jobs = list(pending)
    for (cap, owner, reason), count in zip(caps, counts, strict=True):
        if cap is None:
            continue
        count.update(owner(job) for job in jobs)
        over = {name for name, n in count.items() if n > cap}
        if not over:
            continue
        seen: defaultdict[str, int] = defaultdict(int)
        for job in sorted(
            (j for j in jobs if owner(j) in over), key=lambda j: (j.submit_time, j.id)
        ):
            seen[owner(job)] += 1
            if seen[owner(job)] > cap:
                out.setdefault(job.id, reason)
    return out
