"""Scheduler settings: defaults, overridden by a YAML file, overridden by flags."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy.engine import make_url

from rota.paths import DEFAULT_ADDRESS, data_dir
from rota.private import private_dir, private_file
from rota.scheduler.policy import make_policy
from rota.scheduler.policy.config import DAY, Limits, PolicyConfig, Weights
from rota.units import parse_duration, parse_size
from rota.validate import HARD_MAX_ARRAY_SIZE, Rules, mount_refusal


@dataclass(frozen=True)
class SchedulerConfig:
    """Everything the daemon reads at start-up. Durations are seconds."""

    listen: str = DEFAULT_ADDRESS
    database_url: str = ""  # empty: SQLite file in the data directory
    policy: str = "rota"  # rota (default), fifo-backfill, fifo, first-fit (docs/policy.md)
    default_time_limit: float = 24 * 3600.0
    max_time_limit: float = 0.0  # 0 = unlimited
    heartbeat_interval: float = 2.0
    node_timeout: float = 30.0  # no heartbeat for this long: node DOWN
    max_telemetry_rate: float = 500.0  # telemetry heartbeats/s of all agents together
    node_grace: float = 300.0  # DOWN this long with jobs: they end NODE_FAIL
    kill_grace: float = 10.0  # SIGTERM -> SIGKILL
    max_requeue: int = 3
    tick_interval: float = 5.0  # periodic pass and housekeeping
    master_port_range: tuple[int, int] = (29500, 29999)  # MASTER_PORT of gang jobs
    open_registration: bool = False  # accept any node name without a token (demos, tests)
    # GPUs (docs/gpus.md): health, foreign processes, dirty memory, idle jobs
    gpu_max_temperature: float = 90.0  # Celsius; 0 = never drain for heat
    gpu_hot_for: float = 60.0  # at or above the maximum this long: unhealthy
    gpu_auto_resume_after: float = 0.0  # healthy again this long: back in service; 0 = admin
    gpu_foreign_blocks: bool = True  # a GPU running a non-rota process gets no jobs
    gpu_dirty_memory: int = 512 * 2**20  # bytes in use on a free GPU that count as held
    gpu_dirty_grace: float = 60.0  # held this long after its job ended: dirty
    idle_gpu_warn_after: float = 1800.0  # a job's GPUs all at 0 % this long: warning; 0 = off
    idle_gpu_cancel_after: float = 0.0  # ... this long: the job is cancelled; 0 = never
    # policy (docs/policy.md "Configuration"); weights/limits/qos_levels name their keys
    weights: Mapping[str, float] = field(default_factory=dict)  # merged over the defaults
    limits: Mapping[str, int] = field(default_factory=dict)  # max_gpus_per_user, ...
    account_shares: Mapping[str, float] = field(default_factory=dict)
    qos_levels: Mapping[str, float] = field(default_factory=dict)  # merged over the defaults
    default_share: float = 1.0  # fair share of accounts not in account_shares
    backfill_depth: int = 16
    backfill_max_job_test: int = 0  # test at most this many jobs per pass; 0 = all
    usage_half_life: float = 7 * DAY
    priority_period: float = 300.0  # priorities and published usage refresh this often
    max_age: float = 7 * DAY  # waiting this long gives the full age factor
    preemption: bool = True
    preemptible_qos: tuple[str, ...] = ()  # jobs of these QoS classes are preemptible too
    # security (docs/security.md)
    max_array_size: int = 10_000  # tasks of one array job, counted before expanding it
    max_jobs_per_submit: int = 1000  # items of one SubmitJobs request
    max_ids_per_request: int = 10_000  # job ids of one ListJobs, CancelJobs, ControlJobs
    allowed_mounts: tuple[str, ...] = ()  # host path prefixes jobs may bind-mount; () = none
    allowed_images: tuple[str, ...] = ()  # image patterns (registry.lab/*); () = any image
    tls_cert: str = ""  # PEM certificate chain the scheduler serves; "" = no TLS
    tls_key: str = ""  # its private key
    tls_client_ca: str = ""  # CA whose client certificates are then required (mutual TLS)
    insecure: bool = False  # allow a non-loopback listen address without TLS
    db_password_file: str = ""  # file holding the database password (else ROTA_DB_PASSWORD)

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


_DURATIONS = {
    "default_time_limit",
    "max_time_limit",
    "heartbeat_interval",
    "node_timeout",
    "node_grace",
    "kill_grace",
    "tick_interval",
    "gpu_hot_for",
    "gpu_auto_resume_after",
    "gpu_dirty_grace",
    "idle_gpu_warn_after",
    "idle_gpu_cancel_after",
    "usage_half_life",
    "priority_period",
    "max_age",
}
_SIZES = {"gpu_dirty_memory"}


def load_config(path: Path | None, **overrides: Any) -> SchedulerConfig:
    """Read ``path`` (its ``scheduler:`` section or the whole file), then apply overrides.

    Unknown keys and bad values raise ValueError naming them; None overrides are ignored.
    """
    values: dict[str, Any] = {}
    if path is not None:
        raw = yaml.safe_load(path.read_text()) or {}
        section = raw.get("scheduler", raw) if isinstance(raw, dict) else raw
        if not isinstance(section, dict):
            raise ValueError(f"settings must be a map (under `scheduler:` or not), got {section!r}")
        values.update(section)
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in fields(SchedulerConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown scheduler setting(s) {unknown}; known: {sorted(known)}")
    for keys, parse in ((_DURATIONS, parse_duration), (_SIZES, parse_size)):
        for key in keys & set(values):
            value = values[key]
            try:
                values[key] = parse(value) if isinstance(value, str) else value
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
            if isinstance(values[key], bool) or not isinstance(values[key], int | float):
                raise ValueError(f"{key} must be a duration or size, got {value!r}")
            if values[key] < 0 or (key == "default_time_limit" and values[key] == 0):
                raise ValueError(f"{key} must be > 0, got {value!r}")
    for key in ("preemptible_qos", "allowed_mounts", "allowed_images"):
        if key in values:
            values[key] = _names(key, values[key])
    config = replace(SchedulerConfig(), **values)
    rate = config.max_telemetry_rate
    if isinstance(rate, bool) or not isinstance(rate, int | float) or rate <= 0:
        raise ValueError(f"max_telemetry_rate must be a number of messages/s > 0, got {rate!r}")
    input_rules(config)  # names a bad security setting now
    if bool(config.tls_cert) != bool(config.tls_key):
        raise ValueError("tls_cert and tls_key must be given together")
    if config.tls_client_ca and not config.tls_cert:
        raise ValueError("tls_client_ca (mutual TLS) needs tls_cert and tls_key")
    # ValueError names a bad policy setting or lists the known policies now, not at the first pass
    make_policy(config.policy, policy_config(config))
    return config


def input_rules(config: SchedulerConfig) -> Rules:
    """The input validator's rules from the settings; ValueError names a bad one."""
    for key in ("max_array_size", "max_jobs_per_submit", "max_ids_per_request"):
        value = getattr(config, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{key} must be a whole number >= 1, got {value!r}")
    if config.max_array_size > HARD_MAX_ARRAY_SIZE:
        raise ValueError(f"max_array_size must be at most {HARD_MAX_ARRAY_SIZE}")
    for prefix in config.allowed_mounts:
        if not prefix.startswith("/") or ".." in prefix.split("/"):
            raise ValueError(f"allowed_mounts: {prefix!r} must be an absolute path without '..'")
        problem = mount_refusal(prefix.rstrip("/") or "/", None)
        if problem:
            raise ValueError(f"allowed_mounts: {prefix!r}: {problem}")
    return Rules(
        max_array_size=config.max_array_size,
        max_jobs_per_submit=config.max_jobs_per_submit,
        max_ids_per_request=config.max_ids_per_request,
        allowed_mounts=config.allowed_mounts,
        allowed_images=config.allowed_images,
    )


def _names(key: str, value: Any) -> tuple[str, ...]:
    """A list of names from YAML; ValueError names ``key`` when it is anything else."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} must be a list of names, got {value!r}")
    return tuple(value)


def policy_config(config: SchedulerConfig) -> PolicyConfig:
    """The policy's settings from the scheduler's; ValueError names an unknown or bad key."""
    for name in ("weights", "limits", "account_shares", "qos_levels"):
        if not isinstance(getattr(config, name), Mapping):
            raise ValueError(f"{name} must be a map of names to numbers")
    numbers = ("backfill_depth", "backfill_max_job_test", "default_share")
    for name in (*numbers, "usage_half_life", "priority_period", "max_age"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        return _policy_config(config)
    except (TypeError, AttributeError) as exc:
        raise ValueError(f"bad policy setting: {exc}") from None


def _policy_config(config: SchedulerConfig) -> PolicyConfig:
    weights = _merge("weights", Weights(), config.weights, float)
    limits = _merge("limits", Limits(), config.limits, _limit)
    qos = {**PolicyConfig().qos_levels, **{str(k): float(v) for k, v in config.qos_levels.items()}}
    if config.backfill_depth < 0 or config.backfill_max_job_test < 0:
        raise ValueError("backfill_depth and backfill_max_job_test must be >= 0")
    if config.default_share <= 0:
        raise ValueError("default_share must be > 0")
    if min(config.usage_half_life, config.priority_period, config.max_age) <= 0:
        raise ValueError("usage_half_life, priority_period and max_age must be > 0")
    return PolicyConfig(
        weights=weights,
        limits=limits,
        max_age=config.max_age,
        priority_period=config.priority_period,
        usage_half_life=config.usage_half_life,
        account_shares={str(k): float(v) for k, v in config.account_shares.items()},
        qos_levels=qos,
        default_time_limit=config.default_time_limit,
        backfill_depth=int(config.backfill_depth),
        backfill_max_job_test=int(config.backfill_max_job_test),
        default_share=float(config.default_share),
        preemption=bool(config.preemption),
    )


def _limit(value: Any) -> int | None:
    if value is None:
        return None
    number = int(value)
    if number < 0:
        raise ValueError(f"must be >= 0, got {value!r}")
    return number


def _merge(name: str, default: Any, given: Mapping[str, Any], cast: Any) -> Any:
    """``default`` (a frozen dataclass) with the keys of ``given`` replaced."""
    known = {f.name for f in fields(default)}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ValueError(f"unknown {name} key(s) {unknown}; known: {sorted(known)}")
    try:
        return replace(default, **{k: cast(v) for k, v in given.items()})
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: {exc}") from None
