"""``sbatch`` and ``scancel`` inside a job, relayed by its node's agent (``JobCommand``).

A container is not trusted: a command is taken only from a node that runs the job's current
attempt while it runs (``authz.may_command_from_job``, decided on the core thread; a refusal is
in the audit log), within ``CommandBudget`` (``job_commands_burst``, then
``job_commands_per_second``, per job and node, checked first, on the event loop) and the sizes
of ``injob.check_command``. It acts as the job's owner, never as an admin
(``authz.job_principal``), through the same submit and cancel as gsub and gcancel, so every
check of theirs applies. Each accepted command is in the audit log, and each job sbatch
submits says in its events where it came from ("submitted from job 12 on node gpu03").

``sbatch --wait`` holds nothing here: the reply names the job (``wait_for``) and the
container's sbatch asks again (``sbatch-wait``, within the same budget, at most every 32
seconds once it waited a while) until an answer is ``ended``; an answer lost on the way (the
agent restarted) is simply asked again.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from rota.inputs import SpecError
from rota.jobspec import JobSpec
from rota.messages import JobCommand, JobCommandReply
from rota.scheduler.agent_hub import AgentSession
from rota.scheduler.cluster.users import AuditEntry, Principal
from rota.scheduler.core.errors import AccessDenied, Conflict, NotFound, UserError
from rota.scheduler.core.injob import TOOLS, CommandBudget, Sbatch, check_command, read_sbatch
from rota.scheduler.core.scancel_line import read_scancel
from rota.scheduler.core.services import Services
from rota.scheduler.core.steps import CoreSteps
from rota.scheduler.core.submission import SubmitItem
from rota.scheduler.core_thread import Executor
from rota.scheduler.facade.jobs import JobsFacade
from rota.validate import HOST_NAME

log = logging.getLogger("rota.scheduler")
MAX_READING = 4  # scripts of one user read, or waiting to be, at once


class InJobFacade:
    """Answers the commands of jobs' containers; one task per command (``run``)."""

    def __init__(
        self, services: Services, core: Executor, steps: CoreSteps, jobs: JobsFacade
    ) -> None:
        self.services = services
        self.core = core
        self.steps = steps
        self.jobs = jobs
        config = services.config
        self.budget = CommandBudget(config.job_commands_burst, config.job_commands_per_second)
        self._running: set[asyncio.Task[None]] = set()
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="rota-injob")
        self._reading: dict[str, int] = {}  # user -> scripts being read or waiting

    def start(self, session: AgentSession, cmd: JobCommand) -> None:
        """Answer ``cmd`` on a task of its own; the reply goes to ``session``, which asked."""
        task = asyncio.create_task(self.run(session, cmd))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def run(self, session: AgentSession, cmd: JobCommand) -> None:
        tool = cmd.tool.removesuffix("-wait") if cmd.tool in TOOLS else "rota"
        try:
            reply = await self._answer(session, cmd)
        except (UserError, SpecError, AccessDenied, NotFound, Conflict) as exc:
            lines = str(exc).splitlines() or ["refused"]
            error = "".join(f"{tool}: error: {line}\n" for line in lines)
            reply = JobCommandReply(cmd.request_id, 1, error=error)
        except Exception:
            log.exception("job %d: %s from node %s failed", cmd.job_id, tool, session.node)
            reply = JobCommandReply(cmd.request_id, 1, error=f"{tool}: error: internal error\n")
        session.outbox.put_nowait(reply)

    async def _answer(self, session: AgentSession, cmd: JobCommand) -> JobCommandReply:
        """The reply to ``cmd``; raises what it prints as an error."""
        clock = self.services.jobs.clock
        if not self.budget.take(cmd.job_id, session.node, clock()):
            log.warning("job %d: %s from node %s refused: rate", cmd.job_id, cmd.tool, session.node)
            raise UserError(
                f"too many commands from job {cmd.job_id}: at most {self.budget.describe()} "
                "(scheduler settings job_commands_burst, job_commands_per_second)"
            )
        check_command(cmd)
        owner = self.steps.command_owner
        node, peer = session.node, session.peer
        found = await self.core.call(owner, node, peer, cmd.tool, cmd.job_id, cmd.attempt)
        display_id, spec, who = found
        origin = f"from job {display_id} on node {node}"
        if cmd.tool == "scancel":
            return JobCommandReply(cmd.request_id, 0, await self._scancel(cmd, who, origin, peer))
        if cmd.tool == "sbatch-wait":
            return await self._waited(cmd, who)
        now = datetime.fromtimestamp(clock()).astimezone()
        host = node if HOST_NAME.match(node) else ""
        read = await self._read(who.user, cmd, spec, host, now)
        item = SubmitItem(read.spec, os.urandom(16).hex(), read.source)
        try:
            results = await self.jobs.submit([item], who, False)
        except AccessDenied as exc:
            await self._record(who, "sbatch", read.source, peer, f"{origin}: {exc}", False)
            raise
        ids = list(results[0].job_ids)
        if ids and "_" in ids[0]:  # an array: its tasks are ARRAYID_TASK
            ids = [ids[0].split("_", 1)[0]]
        detail = f"submitted {origin}"
        await self._record(who, "sbatch", ",".join(ids), peer, detail, True, results[0].job_ids)
        warnings = "".join(f"sbatch: warning: {w}\n" for w in read.warnings)  # stderr, as sbatch
        if read.parsable:
            output = "".join(f"{i}\n" for i in ids)
        else:
            output = "".join(f"Submitted batch job {i}\n" for i in ids)
        wait_for = ids[0] if read.wait and ids else ""
        return JobCommandReply(cmd.request_id, 0, output, warnings, wait_for=wait_for)

    async def _waited(self, cmd: JobCommand, who: Principal) -> JobCommandReply:
        """Whether the job ``argv[0]`` that an sbatch --wait follows ended: ``ended`` with its
        exit code, or ``wait_for`` it again; ``ended`` with exit 1 and the error when it
        cannot be followed (not a job of ``who``'s, no such job)."""
        display_id = cmd.argv[0] if len(cmd.argv) == 1 else ""
        try:
            if not display_id:
                raise UserError("sbatch-wait takes one job id")
            code = await self.core.call(self.steps.waited, who, display_id)
        except (UserError, AccessDenied, NotFound) as exc:
            error = "".join(f"sbatch: error: {line}\n" for line in str(exc).splitlines())
            return JobCommandReply(cmd.request_id, 1, error=error, ended=True)
        if code is None:
            return JobCommandReply(cmd.request_id, 0, wait_for=display_id)
        return JobCommandReply(cmd.request_id, code, ended=True)

    async def _read(
        self, user: str, cmd: JobCommand, spec: JobSpec, host: str, now: datetime
    ) -> Sbatch:
        """``read_sbatch`` on this facade's own thread, for at most ``MAX_READING`` scripts
        of ``user`` at once (UserError beyond). Reading a script costs up to a third of a
        second of CPU: on the event loop's shared default threads (which also renew the
        leader's lease, look up web logins and convert listings) a user's jobs could queue
        thousands of them ahead of everyone's work."""
        count = self._reading.get(user, 0)
        if count >= MAX_READING:
            raise UserError(
                f"{count} scripts of {user}'s jobs are being read; at most {MAX_READING} at "
                "once: try again when one is submitted"
            )
        self._reading[user] = count + 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._reader, read_sbatch, cmd, spec, host, now)
        finally:
            left = self._reading.pop(user) - 1
            if left:
                self._reading[user] = left

    async def _scancel(self, cmd: JobCommand, who: Principal, origin: str, peer: str) -> str:
        """Cancel as ``who`` the jobs named, or those of ``who``'s the filters pick (nothing
        picked: nothing done, as SLURM's scancel); AccessDenied (nothing cancelled) when any
        id is another user's, UserError naming ``--user`` when it names another user."""
        line = read_scancel(cmd.argv)
        ids = list(line.ids)
        if line.filtered:
            try:
                ids = await self.core.call(self.steps.scancel_targets, who, line)
            except AccessDenied as exc:
                words = " ".join(cmd.argv)[:200]
                await self._record(who, "scancel", words, peer, f"{origin}: {exc}", False)
                raise UserError(f"--user: {exc}") from None
            if not ids:
                return ""
        reason = f"cancelled by {who.user} with scancel {origin}"
        try:
            results = await self.jobs.cancel(ids, who, reason)
        except AccessDenied as exc:
            await self._record(who, "scancel", ",".join(ids), peer, f"{origin}: {exc}", False)
            raise
        await self._record(who, "scancel", ",".join(ids), peer, reason)
        # a job a filter picked may have ended since: SLURM's scancel passes over it
        problems = [f"{r.id}: {r.message}" for r in results if not r.ok and not line.filtered]
        if problems:
            raise UserError("\n".join(problems))
        return ""

    async def _record(
        self,
        who: Principal,
        tool: str,
        jobs: str,
        peer: str,
        detail: str,
        allowed: bool = True,
        noted: Sequence[str] = (),
    ) -> None:
        """An audit entry of ``tool`` in a job about ``jobs``, and ``detail`` in the events
        of the jobs ``noted``."""
        entry = AuditEntry(
            self.services.jobs.clock(),
            who.user,
            f"{tool} in a job",
            f"job={jobs[:200]}",
            peer,
            allowed,
            detail,
        )
        await self.core.call(self.steps.command_done, entry, list(noted))
