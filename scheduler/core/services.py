"""Building the scheduler's services: one cluster model, one snapshot builder, one service per
concern, each given exactly the collaborators it uses. The engine is the only caller."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rota.scheduler.config import SchedulerConfig, booking_rules
from rota.scheduler.core.accounting import AccountingService, UsageMeter
from rota.scheduler.core.agents import AgentService
from rota.scheduler.core.audit import RefusalLimiter
from rota.scheduler.core.control import ControlService
from rota.scheduler.core.gpus import GpuHealth
from rota.scheduler.core.job_steps import JobSteps
from rota.scheduler.core.jobs import JobService
from rota.scheduler.core.lifecycle import Lifecycle
from rota.scheduler.core.liveness import Liveness
from rota.scheduler.core.lookup import JobLookup
from rota.scheduler.core.mail import MailService
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.nodes import NodeService
from rota.scheduler.core.noshow import NoShowRule
from rota.scheduler.core.notifications import NotificationService
from rota.scheduler.core.partitions import PartitionService
from rota.scheduler.core.planning import Planner
from rota.scheduler.core.reservations import ReservationService
from rota.scheduler.core.session_rules import SessionRuleBook
from rota.scheduler.core.sessions import SessionService
from rota.scheduler.core.snapshot import SnapshotBuilder
from rota.scheduler.core.unused_notice import UnusedNotice
from rota.scheduler.core.usage import HISTORY_HALF_LIVES, UsageBook
from rota.scheduler.core.users import UsersService
from rota.scheduler.policy import Policy, make_policy
from rota.scheduler.store.protocols import WebSessionRepository
from rota.scheduler.store.store import Store


@dataclass(frozen=True, slots=True)
class Services:
    """The scheduler's services over one model. Not thread-safe: one thread (the engine's
    core thread) calls them all, except ``liveness``, which the event loop stamps, and
    ``web_sessions``, which the dashboard calls on worker threads."""

    config: SchedulerConfig
    model: ClusterModel
    lookup: JobLookup
    snapshots: SnapshotBuilder
    jobs: JobService
    agents: AgentService
    nodes: NodeService
    gpus: GpuHealth
    control: ControlService
    planner: Planner
    reservations: ReservationService
    noshow: NoShowRule  # unused bookings given back (the tick)
    partitions: PartitionService  # the settings file's and admins' (gadmin partition)
    users: UsersService
    meter: UsageMeter  # NVML figures per running job, fed by heartbeats
    accounting: AccountingService
    notifications: NotificationService  # job-end webhooks queued by the store
    mail: MailService  # job mail (sbatch --mail-type) and no-show mail, queued by the store
    policy: Policy  # passes and explanations; runs on the engine's policy thread
    what_if: Policy  # dry runs (gsub --test-only); runs on the engine's what-if thread
    liveness: Liveness  # receipt stamps: written on the event loop, read on the core thread
    sessions: SessionService  # interactive sessions: their jobs, who entered them
    web_sessions: WebSessionRepository  # dashboard logins: the web layer's, off the core thread
    job_steps: JobSteps  # srun steps: checked, numbered and recorded


def build_services(
    store: Store,
    config: SchedulerConfig,
    clock: Callable[[], float],
    policy: Policy,
    monotonic: Callable[[], float] = time.monotonic,
) -> Services:
    """Load the model from ``store`` and compose the services around it, each given the
    repositories it uses. Dry runs get policy instances of their own (same factory, same
    settings; one for the core thread's priorities, one for the what-if thread), so they never
    wait for a pass. ``clock`` is the wall clock (times shown and stored); ``monotonic``
    measures how long a node has been silent (``node_timeout``, ``node_grace``), so a step of
    the wall clock never makes a node look lost."""
    model = ClusterModel(store.jobs, store.nodes, clock, monotonic)
    pconfig = policy.config
    half_life = pconfig.usage_half_life
    now = clock()
    usage = UsageBook.rebuild(
        half_life,
        store.jobs.ended(now - HISTORY_HALF_LIVES * half_life),
        model.jobs.values(),
        now,
    )
    users = UsersService(
        store.users,
        clock,
        RefusalLimiter(config.audit_refusals_per_minute),
        config.audit_retention,
    )
    model.observe(usage.committed)  # the ledger is fed what was written, once written
    lifecycle = Lifecycle(model, config, clock, users.ids_of)
    lookup = JobLookup(model, store.jobs)
    gpus = GpuHealth(model, store.nodes, store.jobs, lifecycle, config, clock, monotonic)
    liveness = Liveness(clock, monotonic)
    reservations = ReservationService(
        model, store.reservations, store.jobs, clock, booking_rules(config), gpus.unhealthy
    )
    partitions = PartitionService(store.partitions, model, config, clock)
    table = partitions.table  # one table, reset in place by ``partitions``
    session_rules = SessionRuleBook(config, partitions.settings)
    snapshots = SnapshotBuilder(
        model,
        lookup,
        gpus,
        usage,
        config,
        pconfig,
        clock,
        reservations=reservations.views,
        partitions=table,
    )
    meter = UsageMeter(model)
    mail = MailService(store.mails, store.booking_mails, config, clock)
    notice = UnusedNotice(config, users.all, mail.address)
    return Services(
        config=config,
        model=model,
        lookup=lookup,
        snapshots=snapshots,
        jobs=JobService(
            model,
            store.jobs,
            lookup,
            lifecycle,
            snapshots,
            make_policy(policy.name, policy.config),
            config,
            pconfig,
            clock,
            reservations=reservations.check_job,
            partitions=table,
            session_rules=session_rules,
        ),
        agents=AgentService(model, store.nodes, lifecycle, liveness, config, clock, monotonic),
        nodes=NodeService(model, store.nodes, lifecycle, gpus, config, clock, partitions=table),
        gpus=gpus,
        control=ControlService(model, lookup, lifecycle, revoked=users.revoked),
        planner=Planner(
            model,
            store.jobs,
            lifecycle,
            snapshots,
            clock,
            revoked=users.revoked,
        ),
        reservations=reservations,
        noshow=NoShowRule(
            reservations,
            model,
            store.jobs,
            lambda: config.reservations.unused_after,
            notice.mails,
        ),
        partitions=partitions,
        users=users,
        meter=meter,
        accounting=AccountingService(
            model, store.usage, meter, config, clock, store.reservations, store.jobs.events
        ),
        notifications=NotificationService(store.notices, config, clock),
        mail=mail,
        policy=policy,
        what_if=make_policy(policy.name, policy.config),
        liveness=liveness,
        sessions=SessionService(model, lookup, lifecycle, users, gpus, session_rules, clock),
        web_sessions=store.web_sessions,
        job_steps=JobSteps(model, lifecycle, store.jobs.events),
    )
