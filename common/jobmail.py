"""Job mail, sbatch's ``--mail-type``/``--mail-user``: the rules the CLI and the scheduler
share (pure; no I/O).

Every type sbatch knows is accepted; rota sends ``BEGIN`` (the job started running), ``END``
(it ended) and ``FAIL`` (it ended FAILED, OUT_OF_MEMORY, NODE_FAIL or TIMEOUT: one mail, the
failure, when both are asked), and ``ALL`` means those three; a job asking for END, FAIL or ALL
also gets ``IDLE``, an idle rule's warning (docs/gpus.md, docs/interactive.md). One mail per kind and attempt;
an array is mailed as a whole (its first start, its last end) unless ``ARRAY_TASKS`` asks
for every task's, as sbatch's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rota.states import JobState

MAIL_TYPES = (
    "NONE",
    "BEGIN",
    "END",
    "FAIL",
    "REQUEUE",
    "ALL",
    "INVALID_DEPEND",
    "STAGE_OUT",
    "TIME_LIMIT",
    "TIME_LIMIT_90",
    "TIME_LIMIT_80",
    "TIME_LIMIT_50",
    "ARRAY_TASKS",
)
SENT = ("BEGIN", "END", "FAIL")  # the kinds rota sends
IDLE = "IDLE"  # an idle rule's warning, mailed once per attempt to a job that asked for END mail
IDLE_WARNINGS = ("idle session: ", "GPUs idle ")  # how those warnings start (grun, batch)
FAILED = frozenset({JobState.FAILED, JobState.OUT_OF_MEMORY, JobState.NODE_FAIL, JobState.TIMEOUT})
MAX_ADDRESS = 254
_ADDRESS = re.compile(r"^[^\s@<>,;\"']+(@[A-Za-z0-9.-]+)?\Z")


def normal_mail_types(items: Iterable[str]) -> tuple[str, ...]:
    """Types as stored: split at commas, upper-cased, each once, in order."""
    out = (t.strip().upper() for item in items for t in item.split(","))
    return tuple(dict.fromkeys(t for t in out if t))


def mail_type_problem(types: Iterable[str]) -> str:
    """Why these types cannot be a job's ``mail_type`` ("" when they can)."""
    unknown = [t for t in types if t not in MAIL_TYPES]
    if unknown:
        return f"{', '.join(unknown)} unknown; one or more of {', '.join(MAIL_TYPES)}"
    return ""


def not_sent(types: Iterable[str]) -> list[str]:
    """The types asked for that rota never sends mail for."""
    return [t for t in types if t not in (*SENT, "ALL", "NONE", "ARRAY_TASKS")]


def mail_user_problem(user: str, domains: tuple[str, ...] | None = None) -> str:
    """Why ``user`` cannot be a ``mail_user`` ("" when it can): an address or a user name;
    with ``domains`` (the scheduler's, None where unknown: the CLI) an address only at one
    of them, ``*`` any."""
    if len(user) > MAX_ADDRESS or not _ADDRESS.match(user):
        return f"{user[:80]!r} is not a mail address (name@domain) or a user name"
    if domains is None or "@" not in user or "*" in domains:
        return ""
    if user.rpartition("@")[2].lower() in {d.lower() for d in domains}:
        return ""
    where = f"addresses at {', '.join(domains)}" if domains else "no addresses"
    return (
        f"{user!r}: mail goes to user names and {where} only "
        "(scheduler settings mail_allowed_domains, mail_domain)"
    )


def idle_mail(types: Iterable[str], warning: str) -> str | None:
    """``IDLE`` when a job with ``mail_type`` ``types`` (END, FAIL or ALL: the end it warns
    of) gets the warning ``warning`` (an idle rule's), else None."""
    if not set(types) & {"END", "FAIL", "ALL"} or not warning.startswith(IDLE_WARNINGS):
        return None
    return IDLE


def mail_kind(types: Iterable[str], old_state: str, new_state: str) -> str | None:
    """The mail a job with ``mail_type`` ``types`` gets for a change from ``old_state`` to
    ``new_state`` (state names), or None."""
    wanted = set(types)
    if "ALL" in wanted:
        wanted |= set(SENT)
    if not wanted & set(SENT) or old_state == new_state:
        return None
    if new_state == JobState.RUNNING.value:
        return "BEGIN" if "BEGIN" in wanted else None
    try:
        state = JobState(new_state)
    except ValueError:
        return None
    if not state.terminal:
        return None
    if state in FAILED and "FAIL" in wanted:
        return "FAIL"
    return "END" if "END" in wanted else None
