"""InteractiveService: grun's, gattach's and rota forward's sessions, opened once the job
runs and relayed through the agent that runs it (``SessionRelay``).

A session first waits for its job (``Waiting`` as its state or pending reason changes), then
opens on the job's node (``Started``) and relays both ways; a terminal opened in a session
warned idle gets the warning as its first line. A grun session whose job already
ended (its command was quick) gets the job's output and exit code instead.

A terminal whose job's node is not connected (a scheduler or agent just restarted) waits
for it, saying so; grun's terminal is opened again when its node's stream was lost, since
its process runs on in the container (``Resumable`` keeps the client's input meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from rota.inputs import SpecError, check_job_ids, check_node_name, check_number, check_text
from rota.messages import SESSION_KINDS, SessionInput, SessionOpen, SessionOutput
from rota.scheduler.agent_hub import LogRelay
from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.errors import Conflict, NotFound
from rota.scheduler.core.services import Services
from rota.scheduler.core.sessions import IDLE_WARNING
from rota.scheduler.core_thread import Executor
from rota.scheduler.session_relay import Resumable, SessionRelay
from rota.states import JobState

POLL = 0.1  # seconds between looks at a job a session waits for, at first
MAX_POLL = 1.0  # ... growing to this for a job that waits long
ENDING = 30.0  # seconds a grun session whose process ended waits for its job's end
MAX_WORDS = 1024  # words of a gattach command
MAX_TERMINAL = 10_000  # rows or columns
# sessions (grun, gattach, forwarded connections, terminals, web-port requests) one user may
# have open or waiting at once: each holds up to a window of the scheduler's memory each way
# and a thread and a process on the node
MAX_USER_SESSIONS = 64
# how an attach to a terminal starts: "" all its kept output (grun's first attach), "from"
# the bytes after resume_from (grun back after losing the scheduler), "tail" its kept output
# (grun --attach: a client that has none of it)
REPLAYS = ("", "from", "tail")


@dataclass(frozen=True, slots=True)
class ClientOpen:
    """What a client opens: a ``kind`` session (``SESSION_KINDS``) in job ``job_id``."""

    job_id: str
    kind: str
    command: tuple[str, ...] = ()
    tty: bool = False
    rows: int = 0
    cols: int = 0
    port: int = 0
    node: str = ""
    reopen: bool = False  # attach: attached before; no replay of the earlier output
    replay: str = ""  # attach to a terminal: "from" resume_from, "tail" (REPLAYS)
    resume_from: int = 0


@dataclass(frozen=True, slots=True)
class Waiting:
    """The job a session waits for: its state, pending reason and estimated start."""

    state: str
    reason: str
    estimated_start: float


@dataclass(frozen=True, slots=True)
class Started:
    """The session is open on ``node``."""

    node: str


SessionEvent = Waiting | Started | SessionOutput


def check_open(request: ClientOpen) -> None:
    """SpecError naming the first field a session's opening gets wrong."""
    check_job_ids("job_id", [request.job_id], 1)
    if request.kind not in SESSION_KINDS:
        raise SpecError("kind", f"{request.kind[:40]!r} is not one of {', '.join(SESSION_KINDS)}")
    if len(request.command) > MAX_WORDS:
        raise SpecError("command", f"{len(request.command)} words; at most {MAX_WORDS}")
    for i, word in enumerate(request.command):
        check_text(f"command[{i}]", word, multiline=True)
    check_number("rows", request.rows, 0, MAX_TERMINAL)
    check_number("cols", request.cols, 0, MAX_TERMINAL)
    if request.kind == "forward":
        check_number("port", request.port, 1, 65535)
    if request.replay not in REPLAYS:
        raise SpecError("replay", f"{request.replay[:40]!r} is not one of '', 'from', 'tail'")
    if request.replay and request.kind != "attach":
        raise SpecError("replay", f"only an attach replays output, not {request.kind!r}")
    check_number("resume_from", request.resume_from, 0, 2**63 - 1)
    if request.node:
        check_node_name("node", request.node)


class InteractiveFacade:
    """Sessions as a principal may open them (``authz``: the job's owner or an admin)."""

    def __init__(
        self, services: Services, core: Executor, relay: SessionRelay, logs: LogRelay
    ) -> None:
        self.services = services
        self.core = core
        self.relay = relay
        self.logs = logs
        self._open: dict[str, int] = {}  # sessions each user has open or waiting now

    async def interact(
        self,
        request: ClientOpen,
        inputs: AsyncIterator[SessionInput],
        who: Principal,
        peer: str = "",
    ) -> AsyncGenerator[SessionEvent, None]:
        """Wait for the job, open the session and relay it (see the module doc). SpecError,
        NotFound, AccessDenied, UserError or Conflict (``who`` has ``MAX_USER_SESSIONS``
        already) before anything is yielded."""
        check_open(request)
        sessions = self.services.sessions
        job = await self.core.call(sessions.target, request.job_id, who, request.kind)
        count = self._open.get(who.user, 0)
        if count >= MAX_USER_SESSIONS:
            raise Conflict(
                f"{who.user} has {count} sessions open or waiting (grun, gattach, forwarded "
                f"connections, terminals); at most {MAX_USER_SESSIONS} at once: end one first"
            )
        self._open[who.user] = count + 1
        try:
            async with contextlib.aclosing(
                self._session(request, inputs, who, peer, job)
            ) as events:
                async for event in events:
                    yield event
        finally:
            left = self._open.pop(who.user) - 1
            if left:
                self._open[who.user] = left

    async def _session(
        self,
        request: ClientOpen,
        inputs: AsyncIterator[SessionInput],
        who: Principal,
        peer: str,
        job: JobRecord,
    ) -> AsyncGenerator[SessionEvent, None]:
        """``interact`` once the session is counted."""
        sessions = self.services.sessions
        shown: Waiting | None = None
        poll = POLL
        while job.state in (JobState.PENDING, JobState.CONFIGURING):
            waiting = Waiting(job.state.value, job.reason, job.estimated_start or 0.0)
            if waiting != shown:
                shown = waiting
                yield waiting
            await asyncio.sleep(poll)
            poll = min(poll * 1.2, MAX_POLL)
            job = await self.core.call(sessions.current, job)
        if job.state is not JobState.RUNNING:
            async for event in self._ended(request, job):
                yield event
            return
        node = request.node or job.node_names[0]
        if node not in job.node_names:
            raise SpecError("node", f"job {job.display_id} runs on {', '.join(job.node_names)}")
        # recorded: gattach, forwards, grun --attach, and any attach by someone other than
        # the job's owner (an admin taking over a user's terminal, its kept output with it)
        if request.kind != "attach" or request.replay == "tail" or who.user != job.user:
            await self.core.call(sessions.entered, job, who, request.kind, node, peer)
        opening = SessionOpen(
            0,
            job.id,
            job.attempt,
            request.kind,
            request.command,
            request.tty,
            request.rows,
            request.cols,
            request.port,
            replay=request.replay,
            resume_from=request.resume_from,
        )
        yield Started(node)
        # grun's terminal is attached again when its node comes back (a gap in piped output
        # would go unnoticed: those end as other sessions do)
        again = request.kind == "attach" and request.tty
        resumable = Resumable(inputs, request.rows, request.cols) if again else None
        attached = True
        reopen = request.reopen
        # the terminal's bytes the client has (None: it asked for the kept tail, none came yet)
        position = None if request.replay == "tail" else request.resume_from
        end = "\r\n" if request.tty else "\n"
        try:
            # Not idle while a client is attached. Inside the try: a client gone (or a task
            # cancelled) at any later point still detaches; the core thread runs both in order.
            await self.core.call(sessions.attached, job.id)
            if request.kind != "forward" and job.warning.startswith(IDLE_WARNING):
                line = f"rota: this session was warned: {job.warning}{end}"
                yield SessionOutput(0, stream=2, data=line.encode())
            while True:
                # a restarted scheduler or agent: a terminal waits for it, a port does not
                if self.relay.hub.live(node) is None and request.kind != "forward":
                    line = (
                        f"rota: node {node} is not connected; waiting for it "
                        f"(job {job.display_id} runs on){end}"
                    )
                    yield SessionOutput(0, stream=2, data=line.encode())
                    job = await self._node_back(job, node)
                    if job.state is not JobState.RUNNING or job.attempt != opening.attempt:
                        attached = False
                        await self.core.call(sessions.detached, job.id)
                        async for event in self._ended(request, job):
                            yield event
                        return
                    line = f"rota: node {node} is back{end}"
                    yield SessionOutput(0, stream=2, data=line.encode())
                lost = False
                if resumable is not None:
                    opening = dataclasses.replace(
                        opening, rows=resumable.rows, cols=resumable.cols, reopen=reopen
                    )
                    if reopen and position is not None:  # exactly what the client misses
                        opening = dataclasses.replace(opening, replay="from", resume_from=position)
                async for out in self.relay.run(node, opening, resumable or inputs):
                    if out.node_lost and resumable is not None:
                        lost = reopen = True  # its process runs on in its container: again
                        continue
                    if out.node_lost:  # gone with the agent's stream
                        why = f"{out.error}: the session is lost; job {job.display_id} runs on"
                        out = SessionOutput(0, error=why)
                    elif out.error and request.kind == "attach":
                        job = await self._end_of(job)
                        if job.state.terminal:  # ended before the session opened: as if it had
                            async for event in self._ended(request, job):
                                yield event
                            return
                    if out.data and out.stream == 1:
                        position = out.offset + len(out.data)
                    if out.exited or out.error or out.detached:
                        # Detached before the end is handed on: a client that leaves as soon as
                        # it has it may leave this generator unfinished until it is collected.
                        attached = False
                        await self.core.call(sessions.detached, job.id)
                    yield out
                if not lost:
                    return
        finally:
            if resumable is not None:
                resumable.close()
            if attached:
                await self.core.call(sessions.detached, job.id)

    async def may_open(self, request: ClientOpen, who: Principal) -> None:
        """Raise as ``interact`` does before anything opens (SpecError, NotFound,
        AccessDenied, UserError): a check made before a job's web port is handed out."""
        check_open(request)
        await self.core.call(self.services.sessions.target, request.job_id, who, request.kind)

    async def _node_back(self, job: JobRecord, node: str) -> JobRecord:
        """The job once ``node``'s agent is connected again, or once the job no longer
        runs (its node stayed away past ``node_grace``, it was cancelled ...)."""
        poll = POLL
        while True:
            job = await self.core.call(self.services.sessions.current, job)
            if job.state is not JobState.RUNNING or self.relay.hub.live(node) is not None:
                return job
            await asyncio.sleep(poll)
            poll = min(poll * 1.2, MAX_POLL)

    async def _end_of(self, job: JobRecord) -> JobRecord:
        """The job once it ended (its node reports it soon after the process ends), or as it
        is after ``ENDING`` seconds."""
        for _ in range(int(ENDING / POLL)):
            job = await self.core.call(self.services.sessions.current, job)
            if job.state.terminal:
                break
            await asyncio.sleep(POLL)
        return job

    async def _ended(
        self, request: ClientOpen, job: JobRecord
    ) -> AsyncGenerator[SessionOutput, None]:
        """A grun session whose job already ended: its output, then its exit code. Any other
        session: why it cannot open."""
        if request.kind != "attach" or not job.state.terminal:
            yield SessionOutput(0, error=f"job {job.display_id} is {job.state.value}, not running")
            return
        if job.node_names and job.start_time:
            node = job.node_names[0]
            try:
                async for data in self.logs.stream(
                    job.display_id, job.id, node, job.attempt, False
                ):
                    yield SessionOutput(0, data=data)
            except NotFound as exc:  # output kept on a node that went away: say so, go on
                yield SessionOutput(0, stream=2, data=f"{exc}\n".encode())
        if job.exit_code is None:
            why = job.reason or "it did not run to its end"
            yield SessionOutput(0, error=f"job {job.display_id} ended {job.state.value}: {why}")
        else:
            yield SessionOutput(0, exited=True, exit_code=job.exit_code)
