"""Scheduler settings: defaults, overridden by a YAML file, overridden by flags.

Each setting is one line of ``SchedulerConfig``: its name, its type from ``rota.settings``
(which checks the value and names it in errors) and its default. Durations are seconds.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from rota.allowlists import DEFAULT_REGISTRIES, mount_refusal
from rota.destinations import parse_networks
from rota.messages import FENCE_KILL_MARGIN
from rota.paths import DEFAULT_ADDRESS, data_dir
from rota.private import private_dir, private_file
from rota.scheduler.core.booking import BookingRules
from rota.scheduler.partition_settings import PartitionSettings, check_partitions
from rota.scheduler.policy import POLICIES
from rota.scheduler.policy.config import DAY, Limits, PolicyConfig, Weights
from rota.settings import (
    Bytes,
    Count,
    Fraction,
    HostPort,
    Names,
    NonNegativeNumber,
    OptionalHostPort,
    Port,
    PositiveNumber,
    PositiveSeconds,
    Seconds,
    Settings,
    load_settings,
)
from rota.validate import HARD_MAX_ARRAY_SIZE, Rules


class WeightSettings(Settings):
    """Priority weights (docs/policy.md); an unset weight keeps the policy's default."""

    age: NonNegativeNumber | None = None
    fairshare_account: NonNegativeNumber | None = None
    fairshare_user: NonNegativeNumber | None = None
    qos: NonNegativeNumber | None = None
    size: NonNegativeNumber | None = None
    service: NonNegativeNumber | None = None
    job_priority: NonNegativeNumber | None = None
    partition_tier: NonNegativeNumber | None = None


class LimitSettings(Settings):
    """Per-user and per-account limits; null: unlimited. ``max_pending_per_user`` is on by
    default (docs/security.md, "Defaults on")."""

    max_gpus_per_user: Count | None = None
    max_gpus_per_account: Count | None = None
    max_pending_per_user: Count | None = 10_000  # pending jobs (array tasks count) of one user
    max_pending_per_account: Count | None = None


class ReservationSettings(Settings):
    """How much users who are not admins may book (README, reservations); null: no cap.
    Who may book for whom follows the users' admin flag and accounts (docs/security.md).
    ``unused_after`` is the no-show rule's grace, not a cap."""

    max_gpus: Count | None = 8  # GPUs of one booking
    max_hours: PositiveNumber | None = 7 * 24.0  # hours of one window
    max_hours_per_week: PositiveNumber | None = 7 * 24.0  # a user's window hours in 7 days
    max_days_ahead: PositiveNumber | None = 90.0  # how far ahead a window may start
    # users may book DAILY and WEEKLY windows (each window within the caps, its repeats counted
    # in max_hours_per_week); false: repeating is for admins only
    users_may_repeat: bool = True
    # the no-show rule (docs/admin.md): an open window no job of its owners has used this
    # long is given back (lent to the queue or released, per booking's ``unused``); 0 = never
    unused_after: Seconds = 1800.0


class SessionQosSettings(Settings):
    """A QoS class's own rules for grun sessions (``interactive_qos``); None: the next rule."""

    interactive_max_time: Seconds | None = None
    interactive_idle_after: Seconds | None = None
    interactive_idle_warning: Seconds | None = None


class SchedulerConfig(Settings):
    """Everything the daemon reads at start-up. Durations are seconds, sizes bytes."""

    listen: HostPort = DEFAULT_ADDRESS
    database_url: str = ""  # empty: SQLite file in the data directory
    policy: str = (
        "rota"  # rota (default), fifo-backfill, fifo, first-fit, easy, las (docs/policy.md)
    )
    default_time_limit: PositiveSeconds = 24 * 3600.0
    max_time_limit: Seconds = 0.0  # 0 = unlimited
    heartbeat_interval: PositiveSeconds = 2.0
    node_timeout: PositiveSeconds = 30.0  # no heartbeat for this long: node DOWN
    max_telemetry_rate: PositiveNumber = 500.0  # telemetry heartbeats/s of all agents together
    node_grace: Seconds = 300.0  # DOWN this long with jobs: they end NODE_FAIL
    kill_grace: Seconds = 10.0  # SIGTERM -> SIGKILL
    max_requeue: Count = 3
    job_file_append: bool = False  # -o/-e files of jobs without open_mode: append, not truncate
    default_memory: Bytes = 16 * 2**30  # memory limit (per node) of a job that sets none; 0: none
    tick_interval: PositiveSeconds = 5.0  # periodic pass and housekeeping
    master_port_range: tuple[Port, Port] = (29500, 29999)  # MASTER_PORT of gang jobs
    open_registration: bool = False  # accept any node name without a token (demos, tests)
    # GPUs (docs/gpus.md): health, foreign processes, dirty memory, idle jobs
    gpu_max_temperature: NonNegativeNumber = 90.0  # Celsius; 0 = never drain for heat
    gpu_hot_for: Seconds = 60.0  # at or above the maximum this long: unhealthy
    gpu_auto_resume_after: Seconds = 0.0  # healthy again this long: back in service; 0 = admin
    gpu_foreign_blocks: bool = True  # a GPU running a non-rota process gets no jobs
    gpu_dirty_memory: Bytes = 512 * 2**20  # bytes in use on a free GPU that count as held
    gpu_dirty_grace: Seconds = 60.0  # held this long after its job ended: dirty
    idle_gpu_warn_after: Seconds = 1800.0  # a job's GPUs all at 0 % this long: warning; 0 = off
    idle_gpu_cancel_after: Seconds = 0.0  # ... this long: the job is cancelled; 0 = never
    idle_gpu_action: Literal["cancel", "requeue"] = "cancel"  # what idle_gpu_cancel_after does
    # interactive sessions (docs/interactive.md)
    interactive_max_sessions: Count = 2  # live grun sessions per user; 0 = no limit
    interactive_max_gpus: Count = 4  # GPUs in one user's live grun sessions; 0 = no limit
    interactive_idle_after: Seconds = 7200.0  # no client and GPUs at 0 % this long: ended
    interactive_idle_warning: Seconds = 900.0  # warned this long before; 0 = no warning
    interactive_max_time: Seconds = 12 * 3600.0  # a session's longest time limit; 0 = none
    # per QoS class, after the partition's and before the three above (docs/interactive.md)
    interactive_qos: dict[str, SessionQosSettings] = Field(default_factory=dict)
    # policy (docs/policy.md "Configuration")
    weights: WeightSettings = WeightSettings()  # merged over the defaults
    limits: LimitSettings = LimitSettings()
    reservations: ReservationSettings = ReservationSettings()
    account_shares: dict[str, PositiveNumber] = Field(default_factory=dict)
    qos_levels: dict[str, Fraction] = Field(default_factory=dict)  # merged over the defaults
    default_share: PositiveNumber = 1.0  # fair share of accounts not in account_shares
    backfill_depth: Count = 16
    backfill_max_job_test: Count = 0  # test at most this many jobs per pass; 0 = all
    usage_half_life: PositiveSeconds = 7 * DAY
    priority_period: PositiveSeconds = 300.0  # priorities and published usage refresh this often
    max_age: PositiveSeconds = 7 * DAY  # waiting this long gives the full age factor
    preemption: bool = True
    preemptible_qos: Names = ()  # jobs of these QoS classes are preemptible too
    # attained-service queues (docs/policy.md "Attained service"); [] = none
    attained_thresholds: list[PositiveSeconds] = Field(default_factory=lambda: [3600.0, 36000.0])
    starvation_factor: NonNegativeNumber = 10.0  # waited this many times its run: queue 0
    min_runtime: Seconds = 900.0  # an attempt runs this long before attained service preempts it
    min_runtime_qos: dict[str, Seconds] = Field(default_factory=dict)  # ... per QoS class
    max_preemptions_per_hour: Count = 2  # by attained service, per job; 0 = no budget
    preemption_grace: Seconds = 30.0  # the job's signal (else SIGTERM) this long before the stop
    # partitions (docs/admin.md "Partitions"); none: one implicit "default" of every node
    partitions: dict[str, PartitionSettings] = Field(default_factory=dict)
    # security (docs/security.md)
    max_array_size: Count = 10_000  # tasks of one array job, counted before expanding it
    max_jobs_per_submit: Count = 1000  # items of one SubmitJobs request
    max_ids_per_request: Count = 10_000  # job ids of one ListJobs, CancelJobs, ControlJobs
    allowed_mounts: Names = ()  # host path prefixes jobs may bind-mount; () = none
    allowed_images: Names = ()  # image patterns (registry.lab/*); () = any image
    allowed_registries: Names = DEFAULT_REGISTRIES  # where images may come from; "*" = any
    user_qos: Names = ("low", "normal")  # QoS classes non-admins may ask for
    tls_cert: str = ""  # PEM certificate chain the scheduler serves; "" = no TLS
    tls_key: str = ""  # its private key
    tls_client_ca: str = ""  # CA whose client certificates are then required (mutual TLS)
    insecure: bool = False  # allow a non-loopback listen address without TLS
    db_password_file: str = ""  # file holding the database password (else ROTA_DB_PASSWORD)
    # high availability (docs/admin.md "Failover"): PostgreSQL only
    ha: bool = False  # one leader among the schedulers on this database; the others stand by
    ha_advertise: OptionalHostPort = ""  # HOST:PORT clients reach this scheduler at; "": listen
    ha_lease: PositiveSeconds = 3.0  # a leader silent this long is replaced
    # observability (docs/metrics.md)
    accounting_retention: Seconds = 365 * DAY  # finished jobs are kept this long; 0 = forever
    http_listen: str = "127.0.0.1:9718"  # /metrics (and later the dashboard); "" = off
    # jobs' web ports on their own origin (docs/interactive.md "On the page"); "" = not served
    web_ports_listen: OptionalHostPort = ""
    # each job's ports on its own host jID.DOMAIN (docs/interactive.md); "" = one shared origin
    web_ports_domain: str = ""
    # job-end webhooks (docs/metrics.md "Notifications")
    notify_tries: Count = 8  # posts of one webhook before it is given up
    notify_backoff: PositiveSeconds = 2.0  # wait after the first failure; doubles each time
    notify_max_backoff: PositiveSeconds = 600.0  # the longest wait between tries
    notify_timeout: PositiveSeconds = 10.0  # one post: connect, send and answer
    webhook_allowed_networks: Names = ()  # CIDRs webhooks may reach beyond public addresses
    # job mail, sbatch --mail-type (docs/admin.md "Mail"); tries and backoff as webhooks'
    mail_relay: HostPort | None = None  # SMTP relay HOST:PORT; unset: mail is not sent
    mail_from: str = "rota"  # the From address (a bare name gets @mail_domain)
    mail_domain: str = ""  # appended to a bare user name (SLURM's MailDomain)
    # domains a job's mail_user address may be at ("*": any); unset: mail_domain alone
    mail_allowed_domains: Names | None = None
    # resource exhaustion (docs/security.md "Resource exhaustion")
    max_connections: Count = 20_000  # gRPC connections at once (agents hold one each)
    http_max_connections: Count = 256  # HTTP connections at once (slow heads evicted first)
    handshake_timeout: PositiveSeconds = 10.0  # TLS and HTTP/2 start, or an HTTP request head
    idle_connection_timeout: PositiveSeconds = 300.0  # a gRPC connection with no call is closed
    audit_retention: Seconds = 90 * DAY  # audit entries are kept this long; 0 = forever
    audit_refusals_per_minute: Count = 20  # refusals of unauthenticated calls recorded per peer
    # sbatch and scancel inside a job (docs/slurm.md): per job and node, this many at once,
    # then job_commands_per_second; a burst of 0 refuses them all
    job_commands_burst: Count = 20
    job_commands_per_second: NonNegativeNumber = 2.0

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, name: str) -> str:
        if name not in POLICIES:
            known = ", ".join(sorted(POLICIES))
            raise ValueError(f"must be one of {known} (unknown policy {name!r})")
        return name

    @field_validator("database_url")
    @classmethod
    def _sqlalchemy_url(cls, url: str) -> str:
        try:
            if url:
                make_url(url)
        except ArgumentError:
            raise ValueError(  # the URL may hold a password: not repeated here
                "must be empty or a SQLAlchemy URL such as sqlite:///PATH or "
                "postgresql+psycopg://USER:PASSWORD@HOST/DB"
            ) from None
        return url

    @field_validator("partitions")
    @classmethod
    def _partitions(cls, parts: dict[str, PartitionSettings]) -> dict[str, PartitionSettings]:
        check_partitions(parts)
        return parts

    @field_validator("web_ports_domain")
    @classmethod
    def _ports_domain(cls, domain: str) -> str:
        return _dns_domain(domain)

    @field_validator("webhook_allowed_networks")
    @classmethod
    def _networks(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        parse_networks(values)
        return values

    @field_validator(
        "max_array_size",
        "max_jobs_per_submit",
        "max_ids_per_request",
        "max_connections",
        "http_max_connections",
    )
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"must be a whole number >= 1, got {value}")
        return value

    @field_validator("max_array_size")
    @classmethod
    def _array_ceiling(cls, value: int) -> int:
        if value > HARD_MAX_ARRAY_SIZE:
            raise ValueError(f"must be at most {HARD_MAX_ARRAY_SIZE}, got {value}")
        return value

    @field_validator("allowed_mounts")
    @classmethod
    def _mount_prefixes(cls, prefixes: tuple[str, ...]) -> tuple[str, ...]:
        for prefix in prefixes:
            if not prefix.startswith("/") or ".." in prefix.split("/"):
                raise ValueError(f"{prefix!r} must be an absolute path without '..'")
            problem = mount_refusal(prefix.rstrip("/") or "/", None)
            if problem:
                raise ValueError(f"{prefix!r}: {problem}")
        return prefixes

    @model_validator(mode="after")
    def _consistent(self) -> SchedulerConfig:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("tls_cert and tls_key must be given together")
        if self.web_ports_domain and not self.web_ports_listen:
            raise ValueError(
                "web_ports_domain needs web_ports_listen: the jobs' hosts under it are served "
                "on that address"
            )
        if self.tls_client_ca and not self.tls_cert:
            raise ValueError("tls_client_ca (mutual TLS) needs tls_cert and tls_key")
        low, high = self.master_port_range
        if low > high:
            raise ValueError(
                f"master_port_range must be [LOW, HIGH], LOW <= HIGH; got {[low, high]}"
            )
        if self.node_timeout <= self.heartbeat_interval:
            raise ValueError(
                f"node_timeout ({self.node_timeout:g}s) must be longer than heartbeat_interval "
                f"({self.heartbeat_interval:g}s), or every node goes DOWN between heartbeats"
            )
        if self.node_grace < self.node_timeout + FENCE_KILL_MARGIN:
            raise ValueError(
                f"node_grace ({self.node_grace:g}s) must be at least node_timeout "
                f"({self.node_timeout:g}s) + {FENCE_KILL_MARGIN:g}s: a cut-off agent stops its "
                "jobs no sooner than node_timeout after its last contact and needs "
                f"{FENCE_KILL_MARGIN:g}s to kill them before they may run elsewhere"
            )
        if self.ha and not self.database_url.startswith("postgresql"):
            raise ValueError(
                "ha needs a PostgreSQL database_url (postgresql+psycopg://...): SQLite serves "
                "one scheduler process only, so there is no standby to fail over to"
            )
        if self.max_time_limit and self.default_time_limit > self.max_time_limit:
            raise ValueError(
                f"default_time_limit ({self.default_time_limit:g}s) must be <= max_time_limit "
                f"({self.max_time_limit:g}s)"
            )
        return self

    def resolved_database_url(self) -> str:
        """The SQLAlchemy URL, defaulting to ``sqlite:///<data dir>/scheduler.db``; a SQLite
        file is created mode 0600 in a 0700 directory. The password comes from
        ``db_password_file``, else ``ROTA_DB_PASSWORD``, else the URL itself."""
        url = self.database_url or f"sqlite:///{private_dir(data_dir()) / 'scheduler.db'}"
        if url.startswith("sqlite:///") and ":memory:" not in url:
            private_file(Path(url.removeprefix("sqlite:///")))
        password = os.environ.get("ROTA_DB_PASSWORD", "")
        if self.db_password_file:
            try:
                password = Path(self.db_password_file).read_text().strip()
            except OSError as exc:
                raise ValueError(
                    f"db_password_file: cannot read {self.db_password_file}: {exc.strerror}"
                ) from None
        if not password:
            return url
        return make_url(url).set(password=password).render_as_string(hide_password=False)


_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
MAX_DOMAIN = 200  # characters: room for a job's label (web_ports_domain) in 253


def _dns_domain(text: str) -> str:
    """``text`` as a DNS domain, lower case, without a trailing dot (ValueError naming the
    problem otherwise): labels of letters, digits and inner hyphens, not an IP address."""
    domain = text.strip().lower().removesuffix(".")
    if not domain:
        return ""
    labels = domain.split(".")
    if len(domain) > MAX_DOMAIN or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError(
            f"{text[:80]!r} is not a DNS domain like ports.lab.example (labels of letters, "
            f"digits and inner hyphens, at most {MAX_DOMAIN} characters)"
        )
    if labels[-1].isdigit():
        raise ValueError(f"{text[:80]!r} is an address, not a DNS domain like ports.lab.example")
    return domain


def load_config(path: Path | None, **overrides: Any) -> SchedulerConfig:
    """Read ``path`` (its ``scheduler:`` section or the whole file), then apply overrides.

    None overrides are ignored. SettingsError (a ValueError) names every unknown key and bad
    value in one line; SettingsFileError says why the file cannot be read.
    """
    return load_settings(SchedulerConfig, "scheduler", path, overrides)


def policy_config(config: SchedulerConfig) -> PolicyConfig:
    """The policy's settings from the scheduler's (already checked)."""
    return PolicyConfig(
        weights=Weights(**config.weights.model_dump(exclude_none=True)),
        limits=Limits(**config.limits.model_dump()),
        max_age=config.max_age,
        priority_period=config.priority_period,
        usage_half_life=config.usage_half_life,
        account_shares=dict(config.account_shares),
        qos_levels={**PolicyConfig().qos_levels, **config.qos_levels},
        default_time_limit=config.default_time_limit,
        backfill_depth=config.backfill_depth,
        backfill_max_job_test=config.backfill_max_job_test,
        default_share=config.default_share,
        preemption=config.preemption,
        attained_thresholds=tuple(sorted(config.attained_thresholds)),
        starvation_factor=config.starvation_factor,
        min_runtime=config.min_runtime,
        min_runtime_qos=dict(config.min_runtime_qos),
        min_runtime_partition={
            name: p.min_runtime
            for name, p in config.partitions.items()
            if p.min_runtime is not None
        },
        max_preemptions_per_hour=config.max_preemptions_per_hour,
    )


def booking_rules(config: SchedulerConfig) -> BookingRules:
    """The caps on users' reservations, from the (already checked) settings."""
    r = config.reservations
    return BookingRules(
        max_gpus=r.max_gpus,
        max_hours=r.max_hours,
        max_hours_per_week=r.max_hours_per_week,
        max_days_ahead=r.max_days_ahead,
        users_may_repeat=r.users_may_repeat,
    )


def input_rules(config: SchedulerConfig) -> Rules:
    """The input validator's rules from the (already checked) settings."""
    return Rules(
        max_array_size=config.max_array_size,
        max_jobs_per_submit=config.max_jobs_per_submit,
        max_ids_per_request=config.max_ids_per_request,
        allowed_mounts=config.allowed_mounts,
        allowed_images=config.allowed_images,
        allowed_registries=config.allowed_registries,
        webhook_networks=config.webhook_allowed_networks,
        mail_domains=mail_domains(config),
    )


def mail_domains(config: SchedulerConfig) -> tuple[str, ...]:
    """The domains a job's ``mail_user`` address may be at: ``mail_allowed_domains``, else
    ``mail_domain`` alone (none without one: user names only)."""
    if config.mail_allowed_domains is not None:
        return tuple(config.mail_allowed_domains)
    return (config.mail_domain,) if config.mail_domain else ()
