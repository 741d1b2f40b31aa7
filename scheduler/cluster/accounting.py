"""Accounting of finished jobs: GPU samples per job, the filter of a listing, the rows
``gacct`` shows and their totals. Pure: no store, no clock."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rota.scheduler.cluster.model import JobRecord
from rota.states import JobState


@dataclass(slots=True)
class JobUsage:
    """NVML figures of one job's GPUs while it ran: ``util_sum`` over ``samples`` (one per GPU
    per heartbeat) and the highest memory used on any one of them (with that GPU's total)."""

    job_id: int
    util_sum: float = 0.0
    samples: int = 0
    memory_peak: int = 0
    memory_total: int = 0

    def add(self, utilization: float, memory_used: int, memory_total: int) -> None:
        self.util_sum += utilization
        self.samples += 1
        if memory_used > self.memory_peak:
            self.memory_peak, self.memory_total = memory_used, memory_total

    @property
    def mean_utilization(self) -> float:
        return self.util_sum / self.samples if self.samples else 0.0


@dataclass(frozen=True, slots=True)
class AccountingQuery:
    """Which finished jobs: empty filters match everything. ``principal`` is the user whose
    jobs the caller may see ("" = every job: an admin asks)."""

    start: float = 0.0  # ended at or after (0 = any time)
    end: float = 0.0  # ended at or before (0 = any time)
    ids: tuple[int, ...] = ()  # job row ids
    array_ids: tuple[int, ...] = ()  # every task of these array jobs
    tasks: tuple[tuple[int, int], ...] = ()  # (array job id, task id)
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    states: tuple[JobState, ...] = ()
    principal: str = ""
    limit: int = 0  # most recent end first; 0 = all
    steps: tuple[str, ...] = ()  # steps asked for by id ("12.0"); their jobs are in ids/tasks
    whole: tuple[str, ...] = ()  # display ids asked for themselves: listed with their steps


@dataclass(frozen=True, slots=True)
class FinishedJob:
    """One line of ``gacct``."""

    job: JobRecord
    usage: JobUsage

    @property
    def elapsed(self) -> float:
        if self.job.start_time is None or self.job.end_time is None:
            return 0.0
        return max(0.0, self.job.end_time - self.job.start_time)

    @property
    def gpus(self) -> int:
        return sum(len(a.gpus) for a in self.job.allocation)

    @property
    def gpu_hours(self) -> float:
        return self.gpus * self.elapsed / 3600.0


@dataclass(frozen=True, slots=True)
class StepRow:
    """One srun step of a finished job in ``gacct``: ``12.0``, from the job's events; or its
    batch script, ``12.batch``, as sacct lists it."""

    job: JobRecord
    step: int
    command: str = ""
    nodes: tuple[str, ...] = ()
    ntasks: int = 0
    state: JobState = JobState.RUNNING  # RUNNING: no end was recorded
    exit_code: int | None = None
    start: float = 0.0
    end: float = 0.0
    batch: bool = False  # the batch script's own line, ``12.batch`` (``step`` unused)

    @property
    def display_id(self) -> str:
        return f"{self.job.display_id}.{'batch' if self.batch else self.step}"


@dataclass(slots=True)
class UsageTotal:
    """GPU-hours and samples of one user's or account's finished jobs."""

    name: str
    jobs: int = 0
    gpu_hours: float = 0.0
    util_sum: float = 0.0
    samples: int = 0
    booked_unused: float = 0.0  # GPU-hours its bookings' owners left unused (users only)

    @property
    def mean_utilization(self) -> float:
        return self.util_sum / self.samples if self.samples else 0.0


def totals(
    rows: Iterable[FinishedJob],
) -> tuple[list[UsageTotal], list[UsageTotal]]:
    """Per user and per account, each in name order."""
    users: dict[str, UsageTotal] = {}
    accounts: dict[str, UsageTotal] = {}
    for row in rows:
        for book, name in ((users, row.job.user), (accounts, row.job.account)):
            total = book.setdefault(name, UsageTotal(name))
            total.jobs += 1
            total.gpu_hours += row.gpu_hours
            total.util_sum += row.usage.util_sum
            total.samples += row.usage.samples
    return _sorted(users), _sorted(accounts)


def _sorted(book: dict[str, UsageTotal]) -> list[UsageTotal]:
    return [book[k] for k in sorted(book)]


def parse_display_ids(ids: Sequence[str]) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """``123`` (a job, or every task of array 123) and ``123_4``; ValueError names a bad one."""
    plain: list[int] = []
    tasks: list[tuple[int, int]] = []
    for text in ids:
        head, sep, tail = text.strip().partition("_")
        if not head.isdigit() or (sep and not tail.isdigit()):
            raise ValueError(f"ids: {text!r} is not a job id (123 or 123_4)")
        if sep:
            tasks.append((int(head), int(tail)))
        else:
            plain.append(int(head))
    return tuple(plain), tuple(tasks)
