"""srun job steps on the core thread: check a step asked for by a node, number it, and record
its start and end in the job's events (which ``gacct -j 12.0`` reads back).

A step's number is the job's next one: one more than the highest its events name (kept in
memory once known, so a restarted scheduler goes on from its events).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from rota.hostlist import compress, expand
from rota.messages import StepStart
from rota.scheduler.cluster.accounting import StepRow
from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord
from rota.scheduler.core import authz
from rota.scheduler.core.errors import AccessDenied, UserError
from rota.scheduler.core.lifecycle import Lifecycle
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.step_layout import StepPlan, plan
from rota.states import JobState

MAX_ARGS = 4096
MAX_BYTES = 512 * 1024  # of a step's arguments, and separately of its environment
MAX_CWD = 4096
STEP_EVENT = re.compile(r"^step ([\d_]+)\.(\d+) ")  # "step 12.3 started ..." (display id . step)
_STARTED = re.compile(r"^step [\d_]+\.(\d+) started: (\d+) task\(s\) on (\S+): (.*)$", re.S)
LOST = "srun lost contact with the scheduler, which restarted"
_ENDED = re.compile(r"^step [\d_]+\.(\d+) ended ([A-Z_]+): exit code (-?\d+)")


@dataclass(frozen=True, slots=True)
class RunningStep:
    """A step in progress, as ``gqueue -s`` shows it: ``id`` is ``JOBID.STEP`` (``12.0``,
    ``12_3.1``), ``name`` its command's program name."""

    job_id: int
    attempt: int
    id: str
    name: str
    nodelist: str
    ntasks: int
    start: float


@dataclass(frozen=True, slots=True)
class StepBegun:
    """A step the scheduler accepted: its job (display id), number and tasks."""

    job_id: int
    display_id: str
    attempt: int
    step: int
    plan: StepPlan


class JobSteps:
    """Checks, numbers and records steps. Core thread only."""

    def __init__(
        self,
        model: ClusterModel,
        lifecycle: Lifecycle,
        history: Callable[[int], Sequence[JobEvent]],
    ) -> None:
        """``history``: a job's stored events (the store's), read once per job."""
        self.model = model
        self.lifecycle = lifecycle
        self.history = history
        self._next: dict[int, int] = {}
        self._running: dict[str, RunningStep] = {}  # by step id, from begin to end

    def begin(self, node: str, start: StepStart) -> StepBegun:
        """Accept the step ``node`` asks for; AccessDenied when the node does not run the
        job's attempt, UserError (srun's message) when the step cannot run."""
        job = self.model.jobs.get(start.job_id)
        refused = authz.may_start_step(node, job, start.attempt)
        if refused or job is None:
            raise AccessDenied(refused or "no such job")
        if job.state not in (JobState.CONFIGURING, JobState.RUNNING):  # the start may lag
            raise UserError(f"job {job.display_id} is {job.state.value}, not RUNNING")
        _check_request(start)
        tasks = plan(job, start.layout)
        step = self._next.get(job.id)
        events: list[JobEvent] = []
        if step is None:  # this job's first step since the scheduler started
            history = self.history(job.id)
            step = 1 + max((_number(e.reason) for e in history), default=-1)
            rows = step_rows(job, history)
            events = [self._lost(job, r) for r in rows if r.state is JobState.RUNNING]
        if len(self._next) > 4 * len(self.model.jobs) + 64:  # forget jobs that ended
            self._next = {k: v for k, v in self._next.items() if k in self.model.jobs}
        self._next[job.id] = step + 1
        nodes = compress([n.node for n in tasks.nodes])
        command = shlex.join(start.argv)
        text = (
            f"step {job.display_id}.{step} started: {tasks.ntasks} task(s) on {nodes}: "
            f"{command[:200]}"
        )
        self.model.commit([], [*events, self.lifecycle.note(job, HistoryKind.INFO, text)])
        name = start.argv[0].rsplit("/", 1)[-1][:64]
        step_id = f"{job.display_id}.{step}"
        self._running[step_id] = RunningStep(
            job.id, job.attempt, step_id, name, nodes, tasks.ntasks, self.lifecycle.clock()
        )
        return StepBegun(job.id, job.display_id, job.attempt, step, tasks)

    def end(self, begun: StepBegun, state: JobState, exit_code: int, why: str) -> None:
        """Record how the step ended (its job may have ended already)."""
        self._running.pop(f"{begun.display_id}.{begun.step}", None)
        text = f"step {begun.display_id}.{begun.step} ended {state.value}: exit code {exit_code}"
        running = JobState.RUNNING.value  # the state the step ran in
        ev = JobEvent(
            begun.job_id,
            self.lifecycle.clock(),
            begun.attempt,
            running,
            running,
            f"{text} ({why[:300]})" if why else text,
            HistoryKind.INFO,
        )
        self.model.commit([], [ev])

    def _lost(self, job: JobRecord, row: StepRow) -> JobEvent:
        """The end of a step an earlier scheduler process left running: its srun failed when
        that scheduler's stream ended, and the agent stopped its tasks."""
        text = f"step {job.display_id}.{row.step} ended FAILED: exit code 1 ({LOST})"
        return self.lifecycle.note(job, HistoryKind.INFO, text)

    def running(self, job_ids: Collection[int]) -> list[RunningStep]:
        """The steps in progress of these jobs, by job and number (a step whose job attempt
        no longer runs is forgotten: its relay may have ended without ``end``)."""
        live = (JobState.CONFIGURING, JobState.RUNNING)
        for key, step in list(self._running.items()):
            job = self.model.jobs.get(step.job_id)
            if job is None or job.state not in live or job.attempt != step.attempt:
                del self._running[key]
        wanted = set(job_ids)
        found = [s for s in self._running.values() if s.job_id in wanted]
        return sorted(found, key=lambda s: (s.job_id, int(s.id.rpartition(".")[2])))


def step_rows(job: JobRecord, events: Sequence[JobEvent]) -> list[StepRow]:
    """The steps of ``job`` as its events recorded them, in number order. A step with no
    recorded end in a job that ended (a scheduler restarted under it, and no later step of
    the job recorded its loss) ended FAILED with the job."""
    rows: dict[int, StepRow] = {}
    for ev in events:
        if m := _STARTED.match(ev.reason):
            step = int(m.group(1))
            rows[step] = StepRow(
                job,
                step,
                m.group(4),
                tuple(expand_or_keep(m.group(3))),
                int(m.group(2)),
                start=ev.time,
            )
        elif (m := _ENDED.match(ev.reason)) and int(m.group(1)) in rows:
            step = int(m.group(1))
            state = JobState(m.group(2)) if m.group(2) in JobState.__members__ else JobState.FAILED
            rows[step] = replace(rows[step], state=state, exit_code=int(m.group(3)), end=ev.time)
    if job.state.terminal:
        for k, row in rows.items():
            if row.state is JobState.RUNNING:
                rows[k] = replace(row, state=JobState.FAILED, end=job.end_time or row.start)
    return [rows[k] for k in sorted(rows)]


def batch_row(job: JobRecord) -> StepRow | None:
    """The ``12.batch`` line of a batch script's job that started (run once, on its first
    node; its state, exit code and times are the job's), None for a job file's job."""
    if not job.spec.slurm_env or job.start_time is None:
        return None
    nodes = tuple(job.node_names[:1])
    return StepRow(
        job,
        -1,
        "batch",
        nodes,
        1,
        state=job.state,
        exit_code=job.exit_code,
        start=job.start_time,
        end=job.end_time or 0.0,
        batch=True,
    )


def expand_or_keep(nodes: str) -> list[str]:
    try:
        return expand(nodes)
    except ValueError:
        return [nodes]


def _number(reason: str) -> int:
    m = STEP_EVENT.match(reason)
    return int(m.group(2)) if m else -1


def _check_request(start: StepStart) -> None:
    if not start.argv or len(start.argv) > MAX_ARGS:
        raise UserError(f"a step needs 1 to {MAX_ARGS} arguments")
    if sum(len(a.encode("utf-8", "surrogateescape")) for a in start.argv) > MAX_BYTES:
        raise UserError(f"a step's arguments may take at most {MAX_BYTES} bytes")
    if len(start.environment) > MAX_BYTES:
        raise UserError(f"a step's environment may take at most {MAX_BYTES} bytes")
    if len(start.cwd) > MAX_CWD or (start.cwd and not start.cwd.startswith("/")):
        raise UserError("a step's working directory must be an absolute path")
