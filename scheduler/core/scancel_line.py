"""``scancel`` inside a job: its command line (job ids and SLURM's filters ``-n/--name``,
``-u/--user``, ``-t/--state``, ``-p/--partition``, ``--me``) and which of the job owner's
jobs the filters pick. Pure; a refusal is a UserError naming the option.

As SLURM's scancel: with filters and no ids, every one of the owner's jobs that passes them;
with ids too, only those of the named jobs that pass them; ids alone, the jobs named. A
filter picks pending and running jobs only, and never another user's: ``-u`` may name the
owner only (``authz.may_pick_jobs_of``). rota cannot signal a job, so ``-s/--signal`` is
refused."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rota.inputs import is_job_id
from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.lookup import parse_display_id
from rota.states import JobState

MAX_IDS = 1000  # job ids of one scancel
MAX_VALUE = 256  # characters of a filter's value
# -t: SLURM's state names and codes (any case); rota has no SUSPENDED job, so S picks none
STATES: dict[str, tuple[JobState, ...]] = {
    "PENDING": (JobState.PENDING,),
    "PD": (JobState.PENDING,),
    "RUNNING": (JobState.CONFIGURING, JobState.RUNNING),
    "R": (JobState.CONFIGURING, JobState.RUNNING),
    "CONFIGURING": (JobState.CONFIGURING,),
    "CF": (JobState.CONFIGURING,),
    "SUSPENDED": (),
    "S": (),
}
_VALUED = {
    "-n": "name",
    "--name": "name",
    "--jobname": "name",
    "-u": "user",
    "--user": "user",
    "-t": "state",
    "--state": "state",
    "-p": "partition",
    "--partition": "partition",
    "-s": "signal",
    "--signal": "signal",
}
_TAKEN = "job ids and -n/--name, -u/--user, -t/--state, -p/--partition, --me"


@dataclass(frozen=True, slots=True)
class ScancelLine:
    """A scancel command line: the ids named and the filters ("" or () when not given)."""

    ids: tuple[str, ...] = ()
    name: str = ""
    user: str = ""
    states: tuple[JobState, ...] | None = None  # None: -t not given
    partition: str = ""
    me: bool = False
    # the ids parsed once, (job, None) or (array, task): a job is looked up in them, not
    # compared with each id (1,000 ids over an array's 10,000 tasks took the core thread 15 s)
    keys: frozenset[tuple[int, int | None]] = field(
        default=frozenset(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", frozenset(parse_display_id(i) for i in self.ids))

    @property
    def filtered(self) -> bool:
        return bool(self.name or self.user or self.partition or self.me) or self.states is not None

    def picks(self, job: JobRecord, owner: str, default: str = "") -> bool:
        """Whether ``job`` is one this line cancels among ``owner``'s jobs (with filters);
        ``default``: the default partition, where a pending job that names none may run."""
        if job.user != owner or job.state not in STATES["PENDING"] + STATES["RUNNING"]:
            return False
        if self.ids and not _named(job, self.keys):
            return False
        if self.states is not None and job.state not in self.states:
            return False
        if self.name and job.name != self.name:
            return False
        if self.partition:
            named = job.spec.partition.split(",") if job.spec.partition else [default]
            places = [job.partition] if job.partition else named
            if self.partition not in places:
                return False
        return True

    def chosen(self, jobs: Iterable[JobRecord], owner: str, default: str = "") -> list[str]:
        """The display ids of the ``jobs`` (live ones) this line cancels among ``owner``'s."""
        picked = (j.display_id for j in jobs if self.picks(j, owner, default))
        return sorted(picked, key=_order)


def read_scancel(argv: Sequence[str]) -> ScancelLine:
    """The ids and filters of a scancel command line; UserError for anything else (an
    option rota's scancel does not take, a bad state, no job named at all)."""
    ids: list[str] = []
    values: dict[str, str] = {}
    me = False
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--me":
            me = True
            continue
        if not word.startswith("-") or word == "-":
            if not is_job_id(word):
                raise UserError(
                    f"Invalid job id {word[:40]!r}: inside a job, rota's scancel takes {_TAKEN}"
                )
            ids.append(word)
            continue
        option, eq, value = word.partition("=") if word.startswith("--") else (word[:2], "", "")
        key = _VALUED.get(option)
        if key is None:
            raise UserError(f"{word[:40]}: inside a job, rota's scancel takes {_TAKEN}")
        if not eq and not word.startswith("--") and len(word) > 2:
            value, eq = word[2:], "="
        if not eq:
            if i >= len(argv):
                raise UserError(f"{option} needs a value")
            value = argv[i]
            i += 1
        if len(value) > MAX_VALUE:
            raise UserError(f"{option}: at most {MAX_VALUE} characters")
        values[key] = value
    if len(ids) > MAX_IDS:
        raise UserError(f"{len(ids)} job ids; at most {MAX_IDS} at once")
    if "signal" in values:
        raise UserError(
            "--signal: rota cannot send a signal to a job; scancel without -s cancels it"
        )
    state = values.get("state")
    states = None
    if state is not None:
        if state.upper() not in STATES:
            raise UserError(
                f"--state: invalid job state specified: {state[:40]!r}; valid job states are "
                "PENDING (PD), RUNNING (R) and SUSPENDED (S)"
            )
        states = STATES[state.upper()]
    line = ScancelLine(
        tuple(ids),
        values.get("name", ""),
        values.get("user", ""),
        states,
        values.get("partition", ""),
        me,
    )
    if not ids and not line.filtered:
        raise UserError("No job identification provided")
    return line


def _named(job: JobRecord, keys: frozenset[tuple[int, int | None]]) -> bool:
    """Whether ids parsed into ``keys`` (``12``: a job, an array task by its own id, or every
    task of array 12; ``12_3``) name ``job``."""
    return (
        (job.id, None) in keys
        or (job.array_job_id, None) in keys
        or (job.array_job_id is not None and (job.array_job_id, job.array_task_id) in keys)
    )


def _order(display_id: str) -> tuple[int, int]:
    number, _, task = display_id.partition("_")
    return int(number), int(task or -1)
