"""Fair-share bookkeeping: the ``UsageLedger``, fed every state change once it is committed
(``UsageBook.committed`` observes the ``ClusterModel``).

A job is counted from the moment it is given GPUs (CONFIGURING) until it releases them (any
state that is not active). An attempt that ends on its own (COMPLETED, FAILED, TIMEOUT,
OUT_OF_MEMORY) also adds its run time to the user's and account's history; cancelled,
preempted and lost attempts do not (their run time says nothing about the job). At start-up
the ledger is rebuilt from the jobs table, so fair share survives a scheduler restart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord
from rota.scheduler.policy.usage import UsageLedger
from rota.states import JobState

OWN_ENDS = frozenset(
    {JobState.COMPLETED, JobState.FAILED, JobState.TIMEOUT, JobState.OUT_OF_MEMORY}
)
HISTORY_HALF_LIVES = 20  # ended jobs older than this many half-lives are not replayed


def gpus_held(job: JobRecord) -> int:
    """GPUs of the job's allocation (its request when the allocation is not known)."""
    if job.allocation:
        return sum(len(a.gpus) for a in job.allocation)
    return job.spec.gpus * job.spec.nodes


class UsageBook:
    """The ledger plus which jobs it counts as holding GPUs now (so nothing counts twice)."""

    def __init__(self, half_life: float) -> None:
        self.ledger = UsageLedger(half_life)
        self.holding: dict[int, tuple[str, str, int]] = {}

    def committed(self, jobs: Sequence[JobRecord], events: Sequence[JobEvent]) -> None:
        """Feed the ledger the transitions of a written batch, in order, each with its job's
        record as written (the ``ClusterModel`` observer: nothing is fed before the commit)."""
        written = {j.id: j for j in jobs}
        for event in events:
            job = written.get(event.job_id)
            if job is not None and event.kind is HistoryKind.STATE:
                self.changed(job, JobState(event.new_state), event.time)

    def changed(self, job: JobRecord, new: JobState, now: float) -> None:
        """Feed the ledger with ``job`` entering state ``new`` at ``now``."""
        if new.active:
            if job.id not in self.holding:
                gpus = gpus_held(job)
                self.holding[job.id] = (job.user, job.account, gpus)
                if gpus:
                    self.ledger.start(job.user, job.account, gpus, now)
            return
        held = self.holding.pop(job.id, None)
        if held is None:
            return
        user, account, gpus = held
        if gpus:
            self.ledger.stop(user, account, gpus, now)
        if new in OWN_ENDS and job.start_time is not None:
            self.ledger.finish(
                user, account, now - job.start_time, job.time_limit, job.spec.time_limit > 0
            )

    @classmethod
    def rebuild(
        cls, half_life: float, ended: Iterable[JobRecord], active: Iterable[JobRecord], now: float
    ) -> UsageBook:
        """Replay ended jobs (start and end times, GPUs) and count active ones, in time order."""
        book = cls(half_life)
        steps: list[tuple[float, int, JobRecord, JobState]] = []
        for job in ended:
            if job.start_time is None or job.end_time is None:
                continue
            end = min(job.end_time, now)
            steps.append((min(job.start_time, end), 1, job, JobState.RUNNING))
            steps.append((end, 0, job, job.state))
        for job in active:
            if job.state.active:
                steps.append((min(job.start_time or now, now), 1, job, JobState.RUNNING))
        steps.sort(key=lambda s: (s[0], s[1], s[2].id))
        for when, _order, job, state in steps:
            book.changed(job, state, when)
        return book
