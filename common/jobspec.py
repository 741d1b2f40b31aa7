"""The job file: a strict, typed reading of what users write (CONVENTIONS.md "The job file").

``parse_job_file(data)`` turns the YAML mapping into a ``JobSpec`` or raises ``SpecError`` naming
the field and what is allowed. Unknown keys are refused. Cluster-dependent checks (is the
request larger than any node?) happen in the scheduler.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rota.inputs import SpecError, check_account
from rota.jobends import NOTIFY_EVENTS
from rota.jobmail import normal_mail_types
from rota.jobsignal import SIGNAL_HELP, canonical_signal
from rota.units import DURATION_HELP, SIZE_HELP, parse_duration, parse_size
from rota.validate import (
    CLIENT_RULES,
    HARD_MAX_ARRAY_SIZE,
    OPEN_MODES,
    PULL_POLICIES,
    Rules,
    array_size,
    check_spec,
)
from rota.when import parse_when

DEFAULT_SHM_SIZE = 2 * 2**30
DEPENDENCY_TYPES = ("after", "afterok", "afternotok", "afterany")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}\Z")
_JOB_ID = re.compile(r"^[0-9]+(_[0-9]+)?\Z")
_ARRAY = re.compile(r"^(?P<body>[0-9,\-:]+)(?:%(?P<limit>[0-9]+))?\Z")


@dataclass(frozen=True, slots=True)
class Mount:
    """A host path bind-mounted into the container."""

    source: str
    target: str
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A validated job request. Sizes in bytes, durations in seconds, times in Unix seconds.

    ``gpus``, ``cpus`` and ``memory`` are per node. ``time_limit`` 0 means the scheduler's
    default. ``begin_time`` 0 means now.
    """

    image: str
    command: tuple[str, ...]
    name: str = ""
    gpus: int = 0
    gpu_type: str = ""
    gpu_memory: int = 0
    cpus: float = 0.0
    memory: int = 0
    nodes: int = 1
    time_limit: float = 0.0
    account: str = ""
    qos: str = ""
    priority: int = 0
    preemptible: bool = False
    requeue: bool = False
    dependency: str = ""
    begin_time: float = 0.0
    array: str = ""
    reservation: str = ""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    exclusive: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    workdir: str = ""
    shm_size: int = DEFAULT_SHM_SIZE
    pull: str = "missing"
    hold: bool = False
    notify_url: str = ""  # a webhook posted when the job ends (rota.jobends)
    notify_on: tuple[str, ...] = ()  # which ends; empty = every end
    output: str = ""  # stdout (and stderr when ``error`` is empty) to this file pattern
    error: str = ""  # stderr to this file pattern
    open_mode: str = ""  # output files: "append", "truncate"; "" = the scheduler's default
    slurm_env: bool = False  # set SLURM's batch-job variables in the container (gsub scripts)
    submit_dir: str = ""  # where gsub ran (SLURM_SUBMIT_DIR); set by the client, not the file
    submit_host: str = ""  # the host gsub ran on (SLURM_SUBMIT_HOST); set by the client
    partition: str = ""  # partitions it may run in, "a" or "a,b"; "" = the default partition
    checkpointable: bool = False  # survives a restart: attained-service preemption may stop it
    signal: str = ""  # "NAME@SECONDS": warn this long before the time limit and a preemption
    interactive: bool = False  # a grun session (set by grun, not the job file)
    tty: bool = False  # an interactive session's process gets a terminal (grun --pty)
    nodelist: str = ""  # only these nodes (a host list, gpu[01-03]); "" = any (sbatch -w)
    exclude: str = ""  # never these nodes (a host list); "" = none (sbatch -x)
    mail_type: tuple[str, ...] = ()  # sbatch --mail-type (rota.jobmail); () = no mail
    mail_user: str = ""  # where mail goes; "" = the job's user
    ntasks: int = 0  # srun's tasks in all (sbatch -n); 0 = one per node
    ntasks_per_node: int = 0  # sbatch --ntasks-per-node; 0 = from ntasks
    gpus_per_task: int = 0  # sbatch --gpus-per-task; 0 = the node's GPUs shared out
    constraint: str = ""  # node features, SLURM's -C expression (rota.constraint); "" = any


def _type_name(value: object) -> str:
    return type(value).__name__


def _str(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise SpecError(key, f"expected a string, got {_type_name(value)}")
    return value


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SpecError(key, f"expected true or false, got {value!r}")
    return value


def _int(key: str, value: Any, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(key, f"expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise SpecError(key, f"must be >= {minimum}, got {value}")
    return value


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(key, f"expected a number, got {value!r}")
    if value < 0:
        raise SpecError(key, f"must be >= 0, got {value}")
    return float(value)


def _size(key: str, value: Any) -> int:
    try:
        return parse_size(value)
    except (ValueError, TypeError):
        raise SpecError(key, f"expected {SIZE_HELP}, got {value!r}") from None


def _duration(key: str, value: Any) -> float:
    try:
        seconds = parse_duration(value)
    except (ValueError, TypeError):
        raise SpecError(key, f"expected {DURATION_HELP}, got {value!r}") from None
    if seconds <= 0:
        raise SpecError(key, f"must be longer than zero, got {value!r}")
    return seconds


def _str_map(key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise SpecError(key, f"expected a mapping of names to values, got {_type_name(value)}")
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not k:
            raise SpecError(key, f"keys must be non-empty strings, got {k!r}")
        if isinstance(v, Mapping | list) or v is None:
            raise SpecError(f"{key}.{k}", f"expected a string, number or boolean, got {v!r}")
        out[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def _command(key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        if not value.strip():
            raise SpecError(key, "must not be empty")
        return ("/bin/sh", "-c", value)
    if isinstance(value, list) and value and all(isinstance(v, str | int | float) for v in value):
        for i, v in enumerate(value):
            if isinstance(v, bool):  # YAML reads true, yes, on ... as booleans
                raise SpecError(
                    f"{key}[{i}]", f"got the boolean {v}; quote the word (e.g. 'true', 'yes')"
                )
        return tuple(str(v) for v in value)
    raise SpecError(key, "expected a non-empty list of strings, or one string run by /bin/sh -c")


def _mounts(key: str, value: Any) -> tuple[Mount, ...]:
    if not isinstance(value, list):
        raise SpecError(key, f"expected a list, got {_type_name(value)}")
    mounts = []
    for i, item in enumerate(value):
        where = f"{key}[{i}]"
        if isinstance(item, str):
            parts = item.split(":")
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
                raise SpecError(where, f"expected SOURCE:TARGET[:ro|rw], got {item!r}")
            item = {"source": parts[0], "target": parts[1], "read_only": parts[2:] == ["ro"]}
        if not isinstance(item, Mapping):
            raise SpecError(where, "expected {source, target, read_only} or 'SOURCE:TARGET[:ro]'")
        unknown = set(item) - {"source", "target", "read_only"}
        if unknown:
            raise SpecError(
                where, f"unknown key(s) {sorted(unknown)}; allowed: source, target, read_only"
            )
        source = _str(f"{where}.source", item.get("source"))
        target = _str(f"{where}.target", item.get("target"))
        for name, path in (("source", source), ("target", target)):
            if not path.startswith("/"):
                raise SpecError(f"{where}.{name}", f"must be an absolute path, got {path!r}")
        mounts.append(
            Mount(source, target, _bool(f"{where}.read_only", item.get("read_only", False)))
        )
    return tuple(mounts)


def _notify(key: str, value: Any) -> tuple[str, tuple[str, ...]]:
    """``notify: {url: ..., on: [end, fail, timeout, cancel]}`` or just the URL."""
    if isinstance(value, str):
        value = {"url": value}
    if not isinstance(value, Mapping):
        raise SpecError(key, f"expected {{url: URL, on: [...]}} or a URL, got {_type_name(value)}")
    value = {"on" if k is True else k: v for k, v in value.items()}  # YAML 1.1 reads on as true
    unknown = sorted(str(k) for k in value if k not in ("url", "on"))
    if unknown:
        raise SpecError(f"{key}.{unknown[0]}", "unknown key; allowed: url, on")
    url = _str(f"{key}.url", value.get("url"))
    on = value.get("on") or []
    if isinstance(on, str):
        on = [w.strip() for w in on.split(",")]
    if not isinstance(on, list) or not all(isinstance(w, str) for w in on):
        raise SpecError(f"{key}.on", f"expected a list of {', '.join(NOTIFY_EVENTS)}")
    return url, tuple(dict.fromkeys(on))


def parse_dependency(text: str) -> list[tuple[str, list[str]]]:
    """Parse SLURM's ``afterok:12:13,afterany:14`` into ``[(type, [ids])]``; ValueError if bad.
    As SLURM reads them, a bare id (``12``) is ``afterany:12`` and ``singleton`` is
    ``("singleton", [])``: after every earlier job of the same name and user has ended."""
    out: list[tuple[str, list[str]]] = []
    for clause in text.replace("?", ",").split(","):
        parts = clause.strip().split(":")
        if parts == ["singleton"]:
            out.append(("singleton", []))
            continue
        if len(parts) == 1 and _JOB_ID.match(parts[0]):
            parts = ["afterany", parts[0]]
        if len(parts) < 2 or parts[0] not in DEPENDENCY_TYPES:
            raise ValueError(
                f"expected TYPE:ID[:ID...][,TYPE:ID...] with TYPE one of "
                f"{', '.join(DEPENDENCY_TYPES)}, or singleton, got {text!r}"
            )
        ids = parts[1:]
        for job_id in ids:
            if not _JOB_ID.match(job_id):
                raise ValueError(f"job id {job_id!r} in {text!r} is not a job id like 123 or 123_4")
        out.append((parts[0], ids))
    return out


def parse_array(text: str, max_tasks: int = HARD_MAX_ARRAY_SIZE) -> tuple[list[int], int]:
    """Parse ``0-99%10``, ``1,3,5`` or ``0-15:4`` into (task ids, concurrent limit; 0 = none).

    The tasks are counted before anything is expanded: more than ``max_tasks`` is a ValueError
    (the scheduler's own ``max_array_size`` is applied earlier, by ``check_spec``).
    """
    count = array_size(text)
    if count > max_tasks:
        raise ValueError(f"array {text!r} names {count} tasks; at most {max_tasks} are allowed")
    m = _ARRAY.match(text.replace(" ", ""))
    assert m is not None  # array_size accepted it
    ids: set[int] = set()
    for part in m.group("body").split(","):
        body, _, step = part.partition(":")
        low, _, high = body.partition("-")
        ids.update(range(int(low), int(high or low) + 1, int(step or 1)))
    limit = int(m.group("limit")) if m.group("limit") else 0
    return sorted(ids), limit


def parse_begin(value: Any, now: datetime | None = None) -> float:
    """A begin time: Unix seconds, a YAML date or time, or text in ``rota.when``'s grammar
    (local time unless it names a zone; ``now`` defaults to the current time)."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return parse_when(str(value), now or datetime.now().astimezone())


def _begin(key: str, value: Any) -> float:
    try:
        return parse_begin(value)
    except (ValueError, TypeError) as exc:
        raise SpecError(key, str(exc)) from None


def _checked(parser: Callable[[str], Any], what: str) -> Callable[[str, Any], str]:
    def check(key: str, value: Any) -> str:
        text = _str(key, value)
        try:
            parser(text)
        except ValueError as exc:
            raise SpecError(key, str(exc)) from None
        return text

    check.__doc__ = what
    return check


def _name(key: str, value: Any) -> str:
    text = _str(key, value)
    if not _NAME.match(text):
        raise SpecError(key, "use up to 128 letters, digits and _ . : + - (starting alphanumeric)")
    return text


def _account(key: str, value: Any) -> str:
    text = _str(key, value)
    check_account(key, text)
    return text


def _partition(key: str, value: Any) -> str:
    """``a``, ``a,b`` or a list of names; kept as ``a,b``."""
    items = value if isinstance(value, list) else _str(key, value).split(",")
    names = [_name(key, item.strip() if isinstance(item, str) else item) for item in items]
    if not names:
        raise SpecError(key, "name at least one partition")
    return ",".join(dict.fromkeys(names))


def _hostlist(key: str, value: Any) -> str:
    """A host list (``gpu[01-03],cpu1``) or a list of names; kept as one comma-joined text
    (``check_spec`` expands and checks it)."""
    items = value if isinstance(value, list) else [_str(key, value)]
    return ",".join(_str(key, item).strip() for item in items if str(item).strip())


def _mail_types(key: str, value: Any) -> tuple[str, ...]:
    """``BEGIN,END`` or a list of types; kept upper-cased, each once."""
    items = value if isinstance(value, list) else [_str(key, value)]
    return normal_mail_types(_str(key, item) for item in items)


def _pull(key: str, value: Any) -> str:
    text = _str(key, value)
    if text not in PULL_POLICIES:
        raise SpecError(key, f"expected one of {', '.join(PULL_POLICIES)}, got {text!r}")
    return text


def _open_mode(key: str, value: Any) -> str:
    text = _str(key, value)
    if text not in OPEN_MODES:
        raise SpecError(key, f"expected one of {', '.join(OPEN_MODES)}, got {text!r}")
    return text


def _signal(key: str, value: Any) -> str:
    try:
        return canonical_signal(_str(key, value))
    except ValueError as exc:
        raise SpecError(key, f"{exc}; expected {SIGNAL_HELP}") from None


def _gpus(key: str, value: Any) -> int:
    return _int(key, value, minimum=0)


_RESOURCE_FIELDS: dict[str, tuple[str, Callable[[str, Any], Any]]] = {
    "gpus": ("gpus", _gpus),
    "gpu_type": ("gpu_type", _str),
    "gpu_memory": ("gpu_memory", _size),
    "cpus": ("cpus", _number),
    "memory": ("memory", _size),
}

_TOP_FIELDS: dict[str, tuple[str, Callable[[str, Any], Any]]] = {
    "name": ("name", _name),
    "image": ("image", _str),
    "command": ("command", _command),
    "nodes": ("nodes", lambda k, v: _int(k, v, minimum=1)),
    "time_limit": ("time_limit", _duration),
    "account": ("account", _account),
    "qos": ("qos", _name),
    "priority": ("priority", _int),
    "preemptible": ("preemptible", _bool),
    "requeue": ("requeue", _bool),
    "dependency": ("dependency", _checked(parse_dependency, "dependency")),
    "begin": ("begin_time", _begin),
    "array": ("array", _checked(array_size, "array")),
    "reservation": ("reservation", _name),
    "partition": ("partition", _partition),
    "nodelist": ("nodelist", _hostlist),
    "exclude": ("exclude", _hostlist),
    "mail_type": ("mail_type", _mail_types),
    "mail_user": ("mail_user", _str),
    "node_selector": ("node_selector", _str_map),
    "exclusive": ("exclusive", _bool),
    "env": ("env", _str_map),
    "mounts": ("mounts", _mounts),
    "workdir": ("workdir", _str),
    "shm_size": ("shm_size", _size),
    "pull": ("pull", _pull),
    "hold": ("hold", _bool),
    "output": ("output", _str),
    "error": ("error", _str),
    "open_mode": ("open_mode", _open_mode),
    "slurm_env": ("slurm_env", _bool),
    "checkpointable": ("checkpointable", _bool),
    "signal": ("signal", _signal),
    "ntasks": ("ntasks", lambda k, v: _int(k, v, minimum=1)),
    "ntasks_per_node": ("ntasks_per_node", lambda k, v: _int(k, v, minimum=1)),
    "gpus_per_task": ("gpus_per_task", lambda k, v: _int(k, v, minimum=1)),
    "constraint": ("constraint", lambda k, v: _str(k, v).strip()),
}

ALLOWED_KEYS = (*_TOP_FIELDS, "notify", "resources")


def parse_job_file(data: Any, rules: Rules = CLIENT_RULES) -> JobSpec:
    """Validate a job file's mapping (types here, then ``check_spec`` with ``rules``); raise
    SpecError naming the first bad field."""
    if not isinstance(data, Mapping):
        raise SpecError("(top level)", f"expected a mapping of job fields, got {_type_name(data)}")
    unknown = sorted(str(k) for k in data if k not in ALLOWED_KEYS)
    if unknown:
        raise SpecError(unknown[0], f"unknown field; allowed fields: {', '.join(ALLOWED_KEYS)}")
    for required in ("image", "command"):
        if data.get(required) in (None, ""):
            raise SpecError(required, "is required")
    values: dict[str, Any] = {}
    for key, (attr, check) in _TOP_FIELDS.items():
        if key in data and data[key] is not None:
            values[attr] = check(key, data[key])
    if data.get("notify") is not None:
        values["notify_url"], values["notify_on"] = _notify("notify", data["notify"])
    resources = data.get("resources")
    resources = {} if resources is None else resources
    if not isinstance(resources, Mapping):
        raise SpecError("resources", f"expected a mapping, got {_type_name(resources)}")
    unknown_res = sorted(str(k) for k in resources if k not in _RESOURCE_FIELDS)
    if unknown_res:
        raise SpecError(
            f"resources.{unknown_res[0]}",
            f"unknown field; allowed: {', '.join(_RESOURCE_FIELDS)}",
        )
    for key, (attr, check) in _RESOURCE_FIELDS.items():
        if key in resources and resources[key] is not None:
            values[attr] = check(f"resources.{key}", resources[key])
    spec = JobSpec(**values)
    check_spec(spec, rules)
    return spec
