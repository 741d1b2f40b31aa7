"""Job mail of an array as a whole, as SLURM's: without ``ARRAY_TASKS`` in ``mail_type``,
``BEGIN`` is mailed once, when the array's first task starts, and ``END`` or ``FAIL`` once,
when its last task ends (``FAIL`` when the array asks for it and a task failed). With
``ARRAY_TASKS`` every task is mailed. So one submission of 10,000 tasks sends at most two
mails, not 20,000 through the lab's relay (docs/security.md)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.engine import Connection

from rota.jobmail import FAILED, mail_kind
from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.store.models import ARRAYS, JOBS
from rota.states import TERMINAL_STATES

PER_TASK = "ARRAY_TASKS"
_ENDED = [s.value for s in TERMINAL_STATES]
_FAILED = [s.value for s in FAILED]


def mail_of(job: JobRecord, old_state: str, new_state: str) -> str | None:
    """The mail a change of ``job`` from ``old_state`` to ``new_state`` calls for
    (``rota.jobmail.mail_kind``); the end of a task mailed with its array is a candidate
    ``END`` that ``whole_arrays`` settles (a task that completed may end a failed array)."""
    kind = mail_kind(job.spec.mail_type, old_state, new_state)
    if job.array_job_id is None or PER_TASK in job.spec.mail_type or kind == "BEGIN":
        return kind
    wanted = set(job.spec.mail_type) & {"END", "FAIL", "ALL"}
    return "END" if wanted and old_state != new_state and new_state in _ENDED else None


def whole_arrays(
    conn: Connection, jobs: Sequence[JobRecord], mails: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``mails`` (rows of ``MAILS`` about ``jobs``, whose new states ``conn`` already holds)
    with those of array tasks that do not ask for ``ARRAY_TASKS`` replaced by the array's
    own: at most one ``BEGIN`` and one ``END``/``FAIL`` per array."""
    by_id = {j.id: j for j in jobs}
    out: list[dict[str, Any]] = []
    grouped: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for mail in mails:
        job = by_id[mail["job_id"]]
        if job.array_job_id is None or PER_TASK in job.spec.mail_type:
            out.append(mail)
        else:
            began = mail["kind"] == "BEGIN"
            grouped[(job.array_job_id, "BEGIN" if began else "END")].append(mail)
    for (array, kind), group in sorted(grouped.items()):
        group.sort(key=lambda m: m["job_id"])
        if kind == "BEGIN":
            if _started_besides(conn, array, {m["job_id"] for m in group}) == 0:
                out.append(group[0])
            continue
        ended = _array_end(conn, array, by_id[group[-1]["job_id"]].spec.mail_type)
        if ended:
            out.append(group[-1] | {"kind": ended})
    return out


def _started_besides(conn: Connection, array: int, ids: set[int]) -> int:
    """Tasks of ``array`` but ``ids`` that have started."""
    j = JOBS.c
    where = and_(j.array_job_id == array, j.start_time.is_not(None), j.id.not_in(ids))
    return int(conn.execute(select(func.count()).where(where)).scalar_one())


def _array_end(conn: Connection, array: int, types: Sequence[str]) -> str:
    """The mail the end of ``array`` calls for ("" while a task has not ended, or when
    ``types`` ask for none): ``FAIL`` when asked and a task failed, else ``END`` when asked."""
    j = JOBS.c
    total = conn.execute(select(ARRAYS.c.tasks).where(ARRAYS.c.id == array)).scalar()
    counts = conn.execute(
        select(
            func.count().filter(j.state.in_(_ENDED)),
            func.count().filter(j.state.in_(_FAILED)),
        ).where(j.array_job_id == array)
    ).one()
    ended, failed = int(counts[0]), int(counts[1])
    if total is None or ended < total:
        return ""
    wanted = set(types)
    if "ALL" in wanted:
        wanted |= {"END", "FAIL"}
    if failed and "FAIL" in wanted:
        return "FAIL"
    return "END" if "END" in wanted else ""
