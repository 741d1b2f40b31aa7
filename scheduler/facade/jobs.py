"""JobService and AccountingService: submit, act on, list, explain and follow jobs."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace

from rota.scheduler.agent_hub import AgentHub, LogRelay
from rota.scheduler.cluster.accounting import AccountingQuery, FinishedJob, StepRow, UsageTotal
from rota.scheduler.cluster.model import JobEvent, JobRecord
from rota.scheduler.cluster.users import Principal
from rota.scheduler.config import input_rules
from rota.scheduler.core import authz
from rota.scheduler.core.errors import Conflict
from rota.scheduler.core.jobs import JobListing, JobPage, SubmitItem, SubmitResult, dry_run
from rota.scheduler.core.lookup import CancelResult
from rota.scheduler.core.services import Services
from rota.scheduler.core.steps import CoreSteps
from rota.scheduler.core.submission import check_items, task_count
from rota.scheduler.core_thread import Executor
from rota.scheduler.large_requests import LARGE_SUBMISSION, LargeCancels, LargeSubmissions
from rota.scheduler.pass_loop import PassLoop
from rota.scheduler.policy.explain import Explanation


class JobsFacade:
    """Jobs as a principal may see and act on them (``authz``); large submissions and
    cancels run in steps (``large``, ``cancels``)."""

    def __init__(
        self,
        services: Services,
        core: Executor,
        steps: CoreSteps,
        hub: AgentHub,
        logs: LogRelay,
        passes: PassLoop,
        large: LargeSubmissions,
        cancels: LargeCancels,
    ) -> None:
        self.services = services
        self.core = core
        self.steps = steps
        self.hub = hub
        self.logs = logs
        self.passes = passes
        self.large = large
        self.cancels = cancels
        self.rules = input_rules(services.config)  # what a job spec may ask (check_items)
        self._reading: dict[str, int] = {}  # outputs each user is reading now (stream_logs)

    async def submit(
        self, items: Sequence[SubmitItem], who: Principal, test_only: bool
    ) -> list[SubmitResult]:
        """Submit as ``who``: the items checked (``check_items``: every door's one check,
        SpecError naming the field), then authorised (accounts resolved, refused as a whole:
        ``authz.may_submit``), then admitted and stored by the core."""
        check_items(items, self.rules)
        resolved = self.steps.authorize_submit(items, who)
        if test_only:  # a decision costs a pass: made on the what-if thread, one at a time
            jobs = self.services.jobs
            results = []
            for item, base in await self.core.call(jobs.dry_runs, resolved, who.user):
                snapshot = await self.core.call(jobs.dry_run_snapshot, base)
                results.append(
                    await self.core.what_if(dry_run, self.services.what_if, item, snapshot)
                )
            return results
        if task_count(resolved) > LARGE_SUBMISSION:
            results = await self.large.submit(resolved, who.user)
        else:
            results = await self.core.call(self.services.jobs.submit, resolved, who.user)
        self.passes.want()
        return results

    async def cancel(self, ids: Sequence[str], who: Principal, reason: str) -> list[CancelResult]:
        """Cancel as ``who``; AccessDenied (nothing changed) when any id names a job ``who``
        may not cancel. Large cancels run in chunks (``LargeCancels``)."""
        await self.core.call(self.steps.check_acts, ids, who, "cancel")
        results = await self.cancels.cancel(ids, who, reason)
        self.passes.want()
        return results

    async def control(self, action: str, ids: Sequence[str], who: Principal) -> list[CancelResult]:
        """Hold, release or requeue as ``who``; AccessDenied as for ``cancel``."""
        results, orders = await self.core.call(self.steps.control, action, ids, who)
        self.hub.dispatch(orders)
        self.passes.want()
        return results

    async def list_jobs(self, listing: JobListing, who: Principal) -> JobPage:
        """A page of jobs (``with_steps``: with their running steps). For non-admins, other users' jobs only while pending or active,
        and without their private parts (``authz.private_view``). Every job's command is cut
        to ``LISTED_COMMAND`` characters (``GetJob`` has it whole), so one user's long scripts
        cannot make a page too large to send to anyone."""
        if not who.admin:
            listing = replace(listing, private_to=who.user)
        page = await self.core.call(self.services.jobs.list_page, listing)
        if listing.with_steps:  # only the steps of jobs this caller sees listed
            ids = [j.id for j in page.jobs]
            page = replace(page, steps=await self.core.call(self.services.job_steps.running, ids))
        return replace(page, jobs=[_listed(authz.private_view(who, j)) for j in page.jobs])

    async def get_job(self, display_id: str, who: Principal) -> tuple[JobRecord, list[JobEvent]]:
        job, events = await self.core.call(self.services.jobs.get, display_id)
        return authz.private_view(who, job), authz.private_history(who, job, events)

    async def explain(
        self, display_id: str, who: Principal
    ) -> tuple[JobRecord, Explanation | None, int]:
        """The job, and when pending why it waits (policy thread) and how many are pending."""
        job, snapshot = await self.core.call(self.services.jobs.explain_target, display_id)
        job = authz.private_view(who, job)
        if snapshot is None:
            return job, None, 0
        why = await self.core.policy(self.services.policy.explain, snapshot, job.id)
        return job, why, len(snapshot.pending)

    async def stream_logs(
        self, display_id: str, attempt: int, follow: bool, who: Principal, node: str = ""
    ) -> AsyncGenerator[bytes, None]:
        """An attempt's output from the agent that ran it (``node``: one rank of a gang;
        default rank 0). NotFound when unreachable; AccessDenied unless ``who`` may read it;
        Conflict when ``who`` reads ``MAX_LOG_STREAMS`` outputs already."""
        location = self.steps.log_location
        job, node, attempt = await self.core.call(location, display_id, attempt, node, who)
        reading = self._reading.get(who.user, 0)
        if reading >= MAX_LOG_STREAMS:
            raise Conflict(
                f"{who.user} is reading {reading} job outputs already (glogs, the job page's "
                f"log); at most {MAX_LOG_STREAMS} at once: end one first"
            )
        self._reading[who.user] = reading + 1
        try:
            async for chunk in self.logs.stream(display_id, job.id, node, attempt, follow):
                yield chunk
        finally:
            left = self._reading.pop(who.user) - 1
            if left:
                self._reading[who.user] = left

    async def list_finished(self, query: AccountingQuery, who: Principal) -> list[FinishedJob]:
        """Finished jobs ``who`` may see (``authz.finished_scope``)."""
        query = replace(query, principal=authz.finished_scope(who))
        return await self.core.call(self.services.accounting.finished, query)

    async def list_accounting(
        self, query: AccountingQuery, who: Principal
    ) -> list[FinishedJob | StepRow]:
        """``list_finished`` with the srun steps of the jobs asked for by id (``gacct``)."""
        query = replace(query, principal=authz.finished_scope(who))
        return await self.core.call(self.services.accounting.listing, query)

    async def usage_summary(
        self, query: AccountingQuery, who: Principal
    ) -> tuple[list[UsageTotal], list[UsageTotal]]:
        """Totals per user and per account, over the jobs ``who`` may see."""
        query = replace(query, principal=authz.finished_scope(who))
        return await self.core.call(self.services.accounting.summary, query)


LISTED_COMMAND = 1024  # characters of a job's command a listing carries
# outputs one user may read at once: each holds a thread of the node's agent and up to a log
# window (agent_hub.LOG_WINDOW) of the scheduler's memory
MAX_LOG_STREAMS = 8


def _listed(job: JobRecord) -> JobRecord:
    """``job`` with its command cut to ``LISTED_COMMAND`` characters in all, ending in ``…``
    when it was cut (a listing shows a command, it does not carry scripts)."""
    left, words = LISTED_COMMAND, []
    for word in job.spec.command:
        if len(word) > left:
            words.append(word[:left] + "…")
            break
        words.append(word)
        left -= len(word)
    if len(words) == len(job.spec.command) and words[-1:] == list(job.spec.command[-1:]):
        return job
    return replace(job, spec=replace(job.spec, command=tuple(words)))
