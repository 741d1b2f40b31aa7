"""Agent settings: defaults, a YAML file (its ``agent:`` section or the whole file), the
environment (``ROTA_SCHEDULER``, ``ROTA_NODE_TOKEN``), then command-line flags; later wins.

Each setting is one line of ``AgentConfig``; its type from ``rota.settings`` checks the value
and names the setting in errors.
"""

from __future__ import annotations

import re
import socket
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from rota.allowlists import DEFAULT_REGISTRIES
from rota.inputs import LABEL_KEY, NODE_NAME
from rota.paths import DEFAULT_ADDRESS, data_dir
from rota.settings import (
    Bytes,
    Count,
    Host,
    HostPort,
    HostPorts,
    Names,
    PositiveSeconds,
    Seconds,
    Settings,
    load_settings,
)
from rota.tls import is_loopback

_NETWORK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
_DOCKER_SCHEMES = ("unix://", "tcp://", "ssh://", "http://", "https://", "npipe://")


def _node(name: str) -> str:
    if not NODE_NAME.fullmatch(name):
        raise ValueError(f"must be a node name (letters, digits, '.', '_', '-'), got {name!r}")
    return name


def _labels(value: Any) -> Any:
    """``k=v,k=v`` (the flag's form) as a map; maps pass through. Keys are checked."""
    if isinstance(value, str):
        pairs = [item.split("=", 1) for item in value.split(",") if item.strip()]
        if any(len(pair) != 2 for pair in pairs):
            raise ValueError(f"must be k=v[,k=v...] or a map, got {value!r}")
        value = {k.strip(): v.strip() for k, v in pairs}
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str) or not LABEL_KEY.fullmatch(key):
                raise ValueError(f"keys must be label names (letters, digits, '._/-'), got {key!r}")
    return value


def _docker_host(url: str) -> str:
    if not url.startswith(_DOCKER_SCHEMES):
        schemes = ", ".join(_DOCKER_SCHEMES)
        raise ValueError(f"must be a Docker engine URL starting with one of {schemes}, got {url!r}")
    return url


def _network(name: str) -> str:
    if name and not _NETWORK.match(name):
        raise ValueError(f"must be a Docker network mode or name (e.g. none, host), got {name!r}")
    return name


class AgentConfig(Settings):
    """Settings of one agent. ``data_dir`` keeps job output per attempt (default: the data
    directory's ``agent-NODE``); ``token_file`` (mode 0600), when set, supplies ``token``,
    which has no command-line flag (``ps`` would show it): ``ROTA_NODE_TOKEN`` or the file."""

    node: Annotated[str, AfterValidator(_node)] = Field(default_factory=socket.gethostname)
    scheduler: HostPorts = DEFAULT_ADDRESS  # several, comma-separated: failed over in turn
    data_dir: Path
    token: str = Field("", repr=False)  # the join token of `gadmin node add`
    token_file: Path | None = None
    address: Host = ""  # how peers reach this node (MASTER_ADDR); default: the host name
    simulate_gpus: Count | None = None  # pretend to have N GPUs (demos, tests)
    gpu_mode: Literal["auto", "nvidia", "env"] = "auto"
    docker_host: Annotated[str, AfterValidator(_docker_host)] | None = None  # default: DOCKER_HOST
    network: Annotated[str, AfterValidator(_network)] = ""  # job containers'; "": the engine's
    labels: Annotated[dict[str, str], BeforeValidator(_labels)] = Field(default_factory=dict)
    heartbeat_interval: PositiveSeconds = 2.0  # until the scheduler's welcome says otherwise
    kill_grace: Seconds = 10.0  # SIGTERM -> SIGKILL when fencing
    # TLS (docs/security.md)
    ca: str = ""  # verify the scheduler with this CA; "" = plaintext (loopback only)
    insecure: bool = False  # allow plaintext to a scheduler off this machine (the token shows)
    cert: str = ""  # this node's client certificate and key (mutual TLS)
    key: str = ""
    # containers (docs/security.md)
    allowed_mounts: Names = ()  # host path prefixes jobs may bind-mount; () = none
    allowed_images: Names = ()  # image patterns; () = any
    allowed_registries: Names = DEFAULT_REGISTRIES  # where images may come from; "*" = any
    default_uid: Count = 65534  # jobs whose user has no passwd entry here run as this
    default_gid: Count = 65534
    allow_root: bool = False  # jobs of root run as root (else as the default uid:gid)
    pids_limit: Count = 4096
    max_output: Bytes = 1 << 30  # output kept per attempt, per file (log, --output, --error)
    # a grun session's last terminal output kept for a client that comes back (at most 4 MiB,
    # a session's window)
    terminal_buffer: Annotated[Bytes, Field(le=4 << 20)] = 64 << 10
    # observability (docs/metrics.md)
    metrics_listen: HostPort | None = None  # serve /metrics here; None = off
    metrics_insecure: bool = False  # allow a non-loopback metrics_listen (no authentication)

    @model_validator(mode="before")
    @classmethod
    def _derived(cls, values: Any) -> Any:
        """Fill ``data_dir`` from the node name and ``token`` from ``token_file``."""
        if not isinstance(values, dict):
            return values
        values = dict(values)
        if values.get("data_dir") is None:
            values["data_dir"] = data_dir() / f"agent-{values.get('node') or socket.gethostname()}"
        if values.get("token_file") is not None:
            values["token"] = _private_token(Path(values["token_file"]))
        return values

    @model_validator(mode="after")
    def _token_not_in_plaintext(self) -> AgentConfig:
        """Without TLS the join token crosses the network readable: only to this machine,
        unless ``insecure`` says so (as the scheduler's own ``insecure``)."""
        if (
            not self.ca
            and not self.insecure
            and not all(is_loopback(one) for one in self.scheduler.split(","))
        ):
            raise ValueError(
                f"scheduler {self.scheduler!r} is not on this machine and no CA is given: the "
                "node's join token would cross the network in plaintext; give --ca (TLS, "
                "docs/security.md) or set insecure: true in the agent's config file"
            )
        return self

    @model_validator(mode="after")
    def _metrics_on_loopback(self) -> AgentConfig:
        if (
            self.metrics_listen
            and not self.metrics_insecure
            and not is_loopback(self.metrics_listen)
        ):
            raise ValueError(
                f"metrics_listen must be a loopback address such as 127.0.0.1:9719, got "
                f"{self.metrics_listen!r}: /metrics has no authentication; scrape through a proxy "
                "or set metrics_insecure: true in the agent's config file"
            )
        return self


def _private_token(path: Path) -> str:
    """The token in ``path``; ValueError when the file cannot be read, or when group or others
    could read it (anyone reading a node token can speak for that node)."""
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ValueError(
                f"token_file {path} can be read by others (mode {stat.S_IMODE(mode):04o}); "
                f"run `chmod 600 {path}`"
            )
        return path.read_text().strip()
    except OSError as exc:
        raise ValueError(f"token_file {path} cannot be read: {exc.strerror or exc}") from None


def load_agent_config(path: Path | None, environ: Mapping[str, str], **flags: Any) -> AgentConfig:
    """The agent's settings from ``path`` (optional), ``environ`` and ``flags`` (None: not
    given). SettingsError (a ValueError) names every unknown key and bad value in one line."""
    env = {
        "scheduler": environ.get("ROTA_SCHEDULER") or None,
        "token": environ.get("ROTA_NODE_TOKEN") or None,
    }
    return load_settings(AgentConfig, "agent", path, env, flags)
