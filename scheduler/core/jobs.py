"""Submitting, finding, listing and cancelling jobs."""

from __future__ import annotations

import bisect
import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rota.inputs import SpecError, check_page_token
from rota.jobspec import JobSpec, parse_dependency
from rota.scheduler.cluster.gpus import human_duration
from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord
from rota.scheduler.cluster.users import Principal
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core import authz
from rota.scheduler.core.errors import NotFound, UserError
from rota.scheduler.core.interactive_limits import interactive_refusal
from rota.scheduler.core.job_steps import RunningStep
from rota.scheduler.core.lifecycle import LAUNCH_PREFIX, Lifecycle, Orders
from rota.scheduler.core.lookup import CancelResult, JobLookup, parse_display_id
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.partition_rules import Admitted, admit_partitions
from rota.scheduler.core.session_rules import SessionRuleBook
from rota.scheduler.core.snapshot import SnapshotBuilder
from rota.scheduler.core.submission import (
    Admission,
    SubmitItem,
    SubmitResult,
    base_record,
    task_ids,
)
from rota.scheduler.policy import Policy, reasons
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.never_fits import never_fits
from rota.scheduler.policy.partitions import PartitionTable
from rota.scheduler.policy.snapshot import Snapshot
from rota.scheduler.store.protocols import DuplicateRequest, JobQuery, JobRepository
from rota.states import ACTIVE_STATES, JobState

DEFAULT_STATES = (JobState.PENDING, *ACTIVE_STATES)  # what a listing shows unless told
MAX_PAGE_SIZE = 2_000  # jobs per listing page at most; clients follow next_page_token
# stop states that would send a job back to the queue; a cancel turns them into CANCELLED
_REQUEUE_BOUND = frozenset(
    s.value for s in (JobState.PENDING, JobState.PREEMPTED, JobState.NODE_FAIL)
)


@dataclass(frozen=True, slots=True)
class JobListing:
    """What a listing asks for; empty filters match everything."""

    states: tuple[JobState, ...] = ()  # empty: DEFAULT_STATES unless ``all_states``
    all_states: bool = False
    ids: tuple[str, ...] = ()  # display ids: "123" (every task of an array) or "123_4"
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    page_size: int = 0  # 0: MAX_PAGE_SIZE, also the most one page holds
    page_token: str = ""  # from the previous page's ``next_page_token``
    private_to: str = ""  # a user: other users' ended jobs are left out (as gacct does)
    with_priority: bool = False  # pending jobs carry their multifactor priority (squeue %p)
    with_steps: bool = False  # the page carries its jobs' running srun steps (gqueue -s)


@dataclass(frozen=True, slots=True)
class JobPage:
    jobs: list[JobRecord]
    next_page_token: str  # "" on the last page
    steps: Sequence[RunningStep] = ()  # with ``with_steps``: the running steps of ``jobs``


class JobService:
    """What users ask of jobs. Every method runs on the core thread; changes commit before
    it returns (new records, swapped into the model once written: a failed commit raises
    and changes nothing in memory)."""

    def __init__(
        self,
        model: ClusterModel,
        store: JobRepository,
        lookup: JobLookup,
        lifecycle: Lifecycle,
        snapshots: SnapshotBuilder,
        dry_run_policy: Policy,
        config: SchedulerConfig,
        policy_config: PolicyConfig,
        clock: Callable[[], float],
        reservations: Callable[[str, str, str], str | None] = (
            lambda name, user, account: f"unknown reservation {name!r}"
        ),
        partitions: PartitionTable | None = None,
        session_rules: SessionRuleBook | None = None,
    ) -> None:
        self.model = model
        self.store = store
        self.lookup = lookup
        self.reservations = reservations  # why a job may not name a reservation (None: may)
        self.lifecycle = lifecycle
        self.snapshots = snapshots
        self.dry_run_policy = dry_run_policy  # on this thread; shares nothing with passes
        self.config = config
        self.policy_config = policy_config
        self.clock = clock
        self.partitions = partitions or PartitionTable()
        self.session_rules = session_rules or SessionRuleBook(config, lambda name: None)

    # ------------------------------------------------------------ submit

    def submit(
        self, items: Sequence[SubmitItem], user: str, test_only: bool = False
    ) -> list[SubmitResult]:
        """Check every item (its spec already checked: ``submission.check_items``) against the
        cluster, then store all of them or none.

        Items whose client request id was seen before return the stored ids (duplicate=True).
        Raises UserError naming the source and field of the first invalid item. (The engine
        runs a large submission in steps instead: ``admit`` here, expanding and storing on a
        thread of its own, then ``adopt`` here in chunks.)
        """
        admission = self.admit(items, user)
        if test_only:
            return [
                self._dry_run(item, base)
                for item, base in zip(admission.new, admission.bases, strict=True)
            ]
        try:
            stored = self.store.submit(admission.expand(), admission.request_ids, user)
        except DuplicateRequest:  # another writer stored one of these ids: answer from its rows
            return self.submit(items, user, test_only)
        self.adopt([job for group in stored for job in group])
        return admission.results(stored)

    def admit(self, items: Sequence[SubmitItem], user: str) -> Admission:
        """The checks of ``submit``, costing per item, not per array task; raises UserError."""
        request_ids = [i.client_request_id for i in items if i.client_request_id]
        if len(request_ids) != len(set(request_ids)):
            raise UserError("client_request_id: must be unique within one SubmitJobs request")
        known = self.store.known_requests(i.client_request_id for i in items)
        new_items = [i for i in items if i.client_request_id not in known]
        admitted = [self._admit_session(i, self._admit_partitions(i, user)) for i in new_items]
        found: set[str] = set()  # dependency targets seen to exist, looked up once per request
        for item, adm in zip(new_items, admitted, strict=True):
            self._check_fits_cluster(item, adm.spec, found)
            self._check_reservation(item, user)
        now = self.clock()
        bases = [base_record(a.spec, user, now, a.default_time_limit) for a in admitted]
        tasks = [task_ids(i.spec) for i in new_items]
        counts = [1 if t is None else len(t) for t in tasks]
        self._check_pending_limits(new_items, bases, counts)
        refused = interactive_refusal(
            [a.spec for a in admitted],
            user,
            self.model.jobs.values(),
            self.config.interactive_max_sessions,
            self.config.interactive_max_gpus,
        )
        if refused:
            raise UserError(refused)
        return Admission(items, user, known, new_items, bases, tasks)

    def adopt(self, jobs: Sequence[JobRecord], build_views: bool = False) -> None:
        """Take committed jobs into the cluster model; ``build_views`` also builds their
        snapshot views now (so that taking a large array in chunks leaves the next pass
        nothing per task to do)."""
        model = self.model
        for job in jobs:
            model.jobs[job.id] = job
        model.touch(job.id for job in jobs)
        if build_views:
            self.snapshots.sync(self.clock())
        model.bump()

    def _dry_run(self, item: SubmitItem, base: JobRecord) -> SubmitResult:
        return dry_run(self.dry_run_policy, item, self.dry_run_snapshot(base))

    def dry_runs(
        self, items: Sequence[SubmitItem], user: str
    ) -> list[tuple[SubmitItem, JobRecord]]:
        """The checks of ``submit``; each new item with the record a dry run of it probes
        (``dry_run_snapshot``, then ``dry_run`` off this thread: a decision costs a pass)."""
        admission = self.admit(items, user)
        return list(zip(admission.new, admission.bases, strict=True))

    def dry_run_snapshot(self, base: JobRecord) -> Snapshot:
        """A snapshot with ``base`` added as the probe (id -1) a dry run decides on."""
        return self.snapshots.snapshot(extra=[dataclasses.replace(base, id=-1)])

    def _check_reservation(self, item: SubmitItem, user: str) -> None:
        spec = item.spec
        if spec.reservation:
            refusal = self.reservations(spec.reservation, user, spec.account or user)
            if refusal is not None:
                raise UserError(f"{item.source or 'job'}: reservation: {refusal}")

    def _admit_partitions(self, item: SubmitItem, user: str) -> Admitted:
        spec = item.spec
        return admit_partitions(
            spec,
            user,
            spec.account or user,
            self.partitions,
            self.config.default_time_limit,
            item.source or "job",
        )

    def _admit_session(self, item: SubmitItem, admitted: Admitted) -> Admitted:
        """A grun session's time limit within its ``interactive_max_time`` (a session naming
        none gets at most that); UserError naming the setting when it asks for more."""
        spec = admitted.spec
        if not spec.interactive:
            return admitted
        rules = self.session_rules.rules(spec.partition, spec.qos)
        if not rules.max_time:
            return admitted
        if spec.time_limit > rules.max_time:
            raise UserError(
                f"{item.source or 'job'}: time_limit: {human_duration(spec.time_limit)} exceeds "
                f"the longest interactive session, {human_duration(rules.max_time)} "
                f"({rules.max_time_from})"
            )
        return dataclasses.replace(
            admitted, default_time_limit=min(admitted.default_time_limit, rules.max_time)
        )

    def _check_fits_cluster(self, item: SubmitItem, spec: JobSpec, found: set[str]) -> None:
        src = item.source or "job"
        if self.config.max_time_limit and spec.time_limit > self.config.max_time_limit:
            raise UserError(
                f"{src}: time_limit: {spec.time_limit:.0f}s exceeds the maximum of "
                f"{self.config.max_time_limit:.0f}s"
            )
        if spec.dependency:
            self._check_dependency_targets(src, spec.dependency, found)
        probe = self.snapshots.pending_view(
            dataclasses.replace(base_record(spec, "probe", 0.0, 0.0), id=-1), blocked=None
        )
        views = self.snapshots
        why = never_fits(probe, (views.node_view(n) for n in self.model.nodes.values()))
        if why is not None:
            raise UserError(f"{src}: {why}")

    def _check_pending_limits(
        self, items: Sequence[SubmitItem], bases: Sequence[JobRecord], counts: Sequence[int]
    ) -> None:
        """Refuse a submission that would take a user or account past its pending-job limit
        (``limits.max_pending_per_user`` / ``_per_account``; every array task counts)."""
        limits = self.policy_config.limits
        caps = (
            ("user", "max_pending_per_user", limits.max_pending_per_user),
            ("account", "max_pending_per_account", limits.max_pending_per_account),
        )
        if all(cap is None for _, _, cap in caps):
            return
        pending = [j for j in self.model.jobs.values() if j.state is JobState.PENDING]
        for kind, key, cap in caps:
            if cap is None:
                continue
            pending_of = Counter(getattr(j, kind) for j in pending)
            for item, base, count in zip(items, bases, counts, strict=True):
                owner = getattr(base, kind)
                pending_of[owner] += count
                if pending_of[owner] > cap:
                    raise UserError(
                        f"{item.source or 'job'}: {kind} {owner} would have {pending_of[owner]} "
                        f"pending jobs; the limit is {cap} (scheduler setting limits.{key}; "
                        "every array task counts)"
                    )

    def _check_dependency_targets(self, src: str, text: str, found: set[str]) -> None:
        """Every job ``text`` names exists; each id is looked up once (``found`` holds those
        seen), by one indexed query, never by reading every task of an array it names."""
        for _kind, ids in parse_dependency(text):
            for job_id in ids:
                if job_id in found:
                    continue
                if not self.lookup.exists(job_id):
                    raise UserError(f"{src}: dependency: job {job_id} does not exist")
                found.add(job_id)

    # ------------------------------------------------------------ read

    def list_jobs(self, query: JobQuery, display_ids: Sequence[str] = ()) -> list[JobRecord]:
        """Jobs matching the query (and ids, if given), as copies safe to read elsewhere.

        Costs O(live jobs) plus O(jobs returned): a page (``after_id``, ``limit``) copies only
        its own jobs, and ids are matched by rule, not expanded into every task first."""
        lookup = self.lookup
        if display_ids:
            query = dataclasses.replace(query, named=tuple(map(parse_display_id, display_ids)))
        if not query.states or set(query.states) - {JobState.PENDING, *ACTIVE_STATES}:
            return [lookup.live(r) for r in self.store.query(query)]
        match = query.matcher()
        jobs = self.model.jobs
        ids = sorted(jobs)
        out: list[JobRecord] = []
        for job_id in ids[bisect.bisect_right(ids, query.after_id) :]:
            job = jobs[job_id]
            if match(job):
                out.append(lookup.copy(job))
                if len(out) == query.limit:
                    break
        return out

    def list_page(self, listing: JobListing) -> JobPage:
        """One page of a listing; the token names where the next page starts."""
        token = listing.page_token.strip()
        try:
            check_page_token("page_token", token)  # at most 18 digits: fits the database
        except SpecError as exc:
            raise UserError(str(exc)) from None
        if listing.page_size < 0:
            raise UserError(
                f"page_size: {listing.page_size} must be >= 0 (0: the server's most, "
                f"{MAX_PAGE_SIZE})"
            )
        if listing.all_states:
            states: tuple[JobState, ...] = ()
        else:
            states = listing.states or DEFAULT_STATES
        query = JobQuery(
            states=states,
            users=listing.users,
            accounts=listing.accounts,
            after_id=int(token or 0),
            limit=min(listing.page_size or MAX_PAGE_SIZE, MAX_PAGE_SIZE),
            private_to=listing.private_to,
        )
        jobs = self.list_jobs(query, listing.ids)
        full = len(jobs) == query.limit
        token = str(jobs[-1].id) if full else ""
        if listing.with_priority and any(j.state is JobState.PENDING for j in jobs):
            jobs = self._with_priority(jobs)
        return JobPage(jobs, token)

    def _with_priority(self, jobs: list[JobRecord]) -> list[JobRecord]:
        """``jobs`` with each pending one's priority as ``explain`` would report it now."""
        snapshot = self.snapshots.snapshot()
        wanted = {j.id for j in jobs}
        views = [p for p in snapshot.pending if p.id in wanted]
        found = self.dry_run_policy.priorities(snapshot, views)
        return [dataclasses.replace(j, priority=found[j.id]) if j.id in found else j for j in jobs]

    def get(self, display_id: str) -> tuple[JobRecord, list[JobEvent]]:
        """One job (a copy) and its events; NotFound, or UserError for a whole array."""
        jobs = self.lookup.resolve(display_id)
        if len(jobs) != 1:
            if not jobs:
                raise NotFound(f"job {display_id} does not exist")
            raise UserError(f"id: {display_id} is an array job; name one task like {display_id}_0")
        return jobs[0], self.store.events(jobs[0].id)

    def explain_target(self, display_id: str) -> tuple[JobRecord, Snapshot | None]:
        """The job named and, when it is pending, a snapshot to explain it with."""
        job, _events = self.get(display_id)
        if job.state is not JobState.PENDING:
            return job, None
        return job, self.snapshots.snapshot()

    def location(self, display_id: str, attempt: int, node: str = "") -> tuple[JobRecord, str, int]:
        """(job, node, attempt) whose output ``glogs`` should read; NotFound if none.

        ``node`` picks one node of a gang (default: rank 0's)."""
        job, events = self.get(display_id)
        if job.attempt == 0:
            raise NotFound(f"job {display_id} has not started, so it has no output yet")
        wanted = attempt or job.attempt
        if wanted == job.attempt and job.allocation:
            nodes = job.node_names
        else:
            launches = [
                e.reason.removeprefix(LAUNCH_PREFIX).split(",")
                for e in events
                if e.attempt == wanted and e.reason.startswith(LAUNCH_PREFIX)
            ]
            if not launches:
                raise NotFound(f"job {display_id} has no attempt {wanted}")
            nodes = launches[-1]
        if node and node not in nodes:
            raise NotFound(
                f"job {display_id} attempt {wanted} did not run on node {node}; "
                f"it ran on {', '.join(nodes)}"
            )
        return job, node or nodes[0], wanted

    # ------------------------------------------------------------ cancel

    def cancel(
        self,
        display_ids: Sequence[str],
        user: str,
        reason: str = "",
        who: Principal | None = None,
    ) -> tuple[list[CancelResult], Orders]:
        """Cancel pending jobs at once and order running ones stopped (COMPLETING ->
        CANCELLED). A job already stopping on its way back to the queue (requeue, preemption)
        ends CANCELLED instead. With ``who``, a job ``who`` may not cancel is left alone and
        its result says why, decided in this same step (a job that appeared after the caller's
        first check is never cancelled for them). (The engine cancels many jobs in chunks
        instead: ``cancel_targets``, then ``cancel_live`` per chunk.)"""
        if not display_ids:
            raise UserError("ids: name at least one job to cancel")
        why = reason or f"cancelled by {user}"
        return self.lookup.act_on(
            display_ids, functools.partial(self._stop, why=why, who=who), live_only=True
        )

    def cancel_targets(self, display_ids: Sequence[str]) -> dict[str, list[int]]:
        """The live jobs each id names, from the model (an id shaped wrongly, or naming no live
        job, maps to none: ``cancel`` says why)."""
        targets: dict[str, list[int]] = {}
        for display_id in display_ids:
            try:
                targets[display_id] = self.lookup.live_ids(display_id)
            except UserError:
                targets[display_id] = []
        return targets

    def cancel_live(
        self,
        job_ids: Sequence[int],
        user: str,
        reason: str = "",
        who: Principal | None = None,
    ) -> tuple[dict[int, str], Orders]:
        """``cancel`` of the jobs among ``job_ids`` still live; why any could not be, by id."""
        why = reason or f"cancelled by {user}"
        return self.lookup.act_on_live(job_ids, functools.partial(self._stop, why=why, who=who))

    def _stop(
        self,
        job: JobRecord,
        events: list[JobEvent],
        orders: Orders,
        why: str,
        who: Principal | None = None,
    ) -> str:
        if who is not None:
            refused = authz.authorize("job.cancel", who, job)
            if refused:
                return refused
        life = self.lifecycle
        if job.state is JobState.PENDING:
            events.append(life.finish(job, JobState.CANCELLED, why))
        elif job.state in (JobState.CONFIGURING, JobState.RUNNING):
            event, kills = life.stop(job, JobState.CANCELLED, why)
            events.append(event)
            orders.extend(kills)
        elif job.state is JobState.COMPLETING and job.stop_state in _REQUEUE_BOUND:
            job.stop_state = JobState.CANCELLED.value
            job.reason = why
            events.append(life.note(job, HistoryKind.INFO, f"{why}; it will not be requeued"))
        return ""


def dry_run(policy: Policy, item: SubmitItem, snapshot: Snapshot) -> SubmitResult:
    """Whether the probe of ``snapshot`` (``JobService.dry_run_snapshot``) would start now,
    else why not, as ``policy`` decides it."""
    plan = policy.decide(snapshot)
    placed = any(p.job_id == -1 for p in plan.placements)
    reason = "" if placed else plan.reasons.get(-1, reasons.RESOURCES)
    return SubmitResult(item.client_request_id, (), reason=reason)
