"""Finding jobs by display id (live in the model, or ended in the store), copies safe to hand
to other threads, and acting on the jobs a list of ids names."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rota.inputs import is_job_id
from rota.scheduler.cluster.model import JobEvent, JobRecord
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.lifecycle import Orders
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.store.protocols import JobQuery, JobRepository
from rota.states import JobState

# applies an action to a new record of one job (changing it), appending events and orders;
# returns why it could not ("": done)
Act = Callable[[JobRecord, list[JobEvent], Orders], str]


def parse_display_id(text: str) -> tuple[int, int | None]:
    """``123`` -> (123, None) (a job, or every task of array 123); ``123_4`` -> (123, 4).
    UserError when ``text`` is not shaped like a job id."""
    text = text.strip()
    if not is_job_id(text):  # bounded: an id past 64 bits is refused, not sent to the database
        raise UserError(f"id: {text[:40]!r} is not a job id like 123 or 123_4")
    array_text, sep, task_text = text.partition("_")
    return int(array_text), int(task_text) if sep else None


@dataclass(frozen=True, slots=True)
class CancelResult:
    """What an action (cancel, hold, release, requeue) did to the jobs one id names."""

    id: str
    ok: bool
    message: str


class JobLookup:
    """Resolves ``123`` (a job, an array task by its own integer id, or every task of array
    123) and ``123_4``."""

    def __init__(self, model: ClusterModel, store: JobRepository) -> None:
        self.model = model
        self.store = store

    def resolve(self, display_id: str) -> list[JobRecord]:
        """Copies of the jobs ``display_id`` names (none when it names nothing); UserError
        when it is not shaped like a job id."""
        job_id, task_id = parse_display_id(display_id)
        if task_id is not None:  # one task: found by the (array, task) index
            named = JobQuery(array_ids=(job_id,), task_ids=(task_id,))
            return [self.live(r) for r in self.store.query(named)]
        # job ``job_id`` itself (an array task by its own id too) and every task of array job_id
        rows = self.store.query(JobQuery(ids=(job_id,), array_ids=(job_id,)))
        return [self.live(r) for r in rows]

    def exists(self, display_id: str) -> bool:
        """Whether ``display_id`` names any job, live or ended (one row read at most)."""
        job_id, task_id = parse_display_id(display_id)
        if task_id is None and job_id in self.model.jobs:
            return True
        if task_id is not None:
            named = JobQuery(array_ids=(job_id,), task_ids=(task_id,), limit=1)
        else:
            named = JobQuery(ids=(job_id,), array_ids=(job_id,), limit=1)
        return bool(self.store.query(named))

    def live(self, job: JobRecord) -> JobRecord:
        """A copy of the current record of ``job``, safe to read on other threads."""
        return self.copy(self.model.jobs.get(job.id, job))

    def copy(self, job: JobRecord) -> JobRecord:
        """A copy of ``job`` carrying the last plan's estimated start when it is pending."""
        pending = job.state is JobState.PENDING
        start = self.model.starts.get(job.id) if pending else None
        return dataclasses.replace(job, estimated_start=start)

    def live_ids(self, display_id: str) -> list[int]:
        """Ids of the live jobs ``display_id`` names, read from the model alone (one scan
        of the live jobs for an array); UserError when it is not shaped like a job id."""
        job_id, task_id = parse_display_id(display_id)
        jobs = self.model.jobs
        job = jobs.get(job_id)
        if task_id is None and job is not None and job.array_job_id != job_id:
            return [job_id]  # a job, or an array task by its own integer id
        return [
            j.id
            for j in jobs.values()
            if j.array_job_id == job_id and (task_id is None or j.array_task_id == task_id)
        ]

    def act_on_live(self, job_ids: Sequence[int], act: Act) -> tuple[dict[int, str], Orders]:
        """Apply ``act`` to the jobs among ``job_ids`` still live (others are skipped) and
        commit; returns why it could not, by job id, and the orders. Commit, then swap: a
        failed commit raises and changes no job in the model."""
        problems: dict[int, str] = {}
        changed: dict[int, JobRecord] = {}
        events: list[JobEvent] = []
        orders: Orders = []
        jobs_now = self.model.jobs
        for job_id in job_ids:
            job = _live(changed.get(job_id) or jobs_now.get(job_id))
            if job is None:
                continue
            job = dataclasses.replace(job)
            problem = act(job, events, orders)
            if problem:
                problems[job_id] = f"{job.display_id} {problem}"
            else:
                changed[job_id] = job
        if changed or events:
            self.model.commit(list(changed.values()), events)
            self.model.bump()
        return problems, orders

    def act_on(
        self, display_ids: Sequence[str], act: Act, live_only: bool = False
    ) -> tuple[list[CancelResult], Orders]:
        """Apply ``act`` to every job each id names and commit; a result per id. ``live_only``
        skips jobs that have ended. Commit, then swap: a failed commit raises and changes no
        job in the model."""
        results: list[CancelResult] = []
        changed: dict[int, JobRecord] = {}
        events: list[JobEvent] = []
        orders: Orders = []
        jobs_now = self.model.jobs
        for display_id in display_ids:
            try:
                found = self.resolve(display_id)
            except UserError as exc:
                results.append(CancelResult(display_id, False, str(exc)))
                continue
            jobs = [
                dataclasses.replace(changed.get(j.id) or jobs_now.get(j.id, j))
                for j in found
                if not live_only or _live(changed.get(j.id) or jobs_now.get(j.id))
            ]
            if not jobs:
                why = "has already ended" if found else "does not exist"
                results.append(CancelResult(display_id, False, f"job {display_id} {why}"))
                continue
            problems = []
            for job in jobs:
                problem = act(job, events, orders)
                if problem:
                    problems.append(f"{job.display_id} {problem}")
                else:
                    changed[job.id] = job
            results.append(CancelResult(display_id, not problems, "; ".join(problems)))
        if changed or events:
            self.model.commit(list(changed.values()), events)
            self.model.bump()
        return results, orders


def _live(job: JobRecord | None) -> JobRecord | None:
    """``job`` unless it is None or has ended (finished earlier in the same request)."""
    return job if job is not None and not job.state.terminal else None
