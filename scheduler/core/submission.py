"""A submission between its checks and its commit: what was admitted, and how it expands.

Submitting is split so that a large array does not hold the core thread: the checks against
the cluster (``JobService.admit``) cost per item, not per task, and run on the core thread;
expanding the items into task records (``Admission.expand``) and the bulk insert touch no shared
state and may run on another thread; the committed records are then taken into the cluster model
in chunks (``JobService.adopt``). A client hears of its jobs only after their rows are committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rota.inputs import SpecError, check_text
from rota.jobspec import JobSpec, parse_array
from rota.scheduler.cluster.model import JobRecord
from rota.states import JobState
from rota.validate import Rules, check_spec

MAX_REQUEST_ID = 128  # characters of a client request id


@dataclass(frozen=True, slots=True)
class SubmitItem:
    spec: JobSpec
    client_request_id: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class SubmitResult:
    client_request_id: str
    job_ids: tuple[str, ...]
    duplicate: bool = False
    reason: str = ""


def check_items(items: Sequence[SubmitItem], rules: Rules) -> None:
    """The one check of a submission's items, whichever door they came through (every
    submission passes ``JobsFacade.submit``), before anything is authorised or stored: at most ``rules.max_jobs_per_submit`` of them,
    each client request id short text, each spec ``check_spec`` against the cluster's
    ``rules``. SpecError names the field: ``SOURCE: field`` or ``items[i].spec.field``."""
    if len(items) > rules.max_jobs_per_submit:
        raise SpecError(
            "items",
            f"{len(items)} jobs in one request; at most {rules.max_jobs_per_submit} "
            "(scheduler setting max_jobs_per_submit)",
        )
    for i, item in enumerate(items):
        check_text(f"items[{i}].client_request_id", item.client_request_id, MAX_REQUEST_ID)
        where = f"{item.source}: " if item.source else f"items[{i}].spec."
        check_spec(item.spec, rules, where)


def base_record(spec: JobSpec, user: str, now: float, default_time_limit: float) -> JobRecord:
    """The record every task of ``spec`` starts from (id 0, not yet stored)."""
    return JobRecord(
        id=0,
        name=spec.name or "job",
        user=user,
        account=spec.account or user,
        spec=spec,
        state=JobState.PENDING,
        submit_time=now,
        time_limit=spec.time_limit or default_time_limit,
        held="user" if spec.hold else "",
    )


def task_ids(spec: JobSpec) -> list[int] | None:
    """The array task ids of ``spec``, None when it is not an array."""
    return parse_array(spec.array)[0] if spec.array else None


def task_count(items: Sequence[SubmitItem]) -> int:
    """How many jobs ``items`` (checked: ``check_items``) would create; every array task
    counts."""
    counts = (task_ids(item.spec) for item in items)
    return sum(1 if ids is None else len(ids) for ids in counts)


def expand(base: JobRecord, ids: list[int] | None) -> list[JobRecord]:
    """The records of one item: ``base`` itself, or one per array task sharing its spec."""
    if ids is None:
        return [base]
    b = base
    return [
        JobRecord(
            id=0,
            name=b.name,
            user=b.user,
            account=b.account,
            spec=b.spec,
            state=b.state,
            submit_time=b.submit_time,
            time_limit=b.time_limit,
            held=b.held,
            array_task_id=t,
        )
        for t in ids
    ]


@dataclass(frozen=True)
class Admission:
    """A checked submission: the items not seen before (``new``), each with its base record
    and task ids, and the stored ids of the items whose client request id was seen (``known``)."""

    items: Sequence[SubmitItem]
    user: str
    known: dict[str, list[str]]
    new: Sequence[SubmitItem]
    bases: Sequence[JobRecord]
    tasks: Sequence[list[int] | None]

    @property
    def request_ids(self) -> list[str]:
        return [i.client_request_id for i in self.new]

    def expand(self) -> list[list[JobRecord]]:
        """One group of records per new item (touches no shared state)."""
        return [expand(b, t) for b, t in zip(self.bases, self.tasks, strict=True)]

    def results(self, stored: Sequence[Sequence[JobRecord]]) -> list[SubmitResult]:
        """The answer, in request order, once ``stored`` (one group per new item) is committed."""
        by_item = {id(item): group for item, group in zip(self.new, stored, strict=True)}
        out = []
        for item in self.items:
            group = by_item.get(id(item))
            if group is None:
                ids = tuple(self.known[item.client_request_id])
                out.append(SubmitResult(item.client_request_id, ids, duplicate=True))
            else:
                out.append(SubmitResult(item.client_request_id, tuple(j.display_id for j in group)))
        return out
