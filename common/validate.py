"""The one input validator shared by the CLI, the scheduler and the agent.

Everything a client sends is checked here before anything is stored or expanded:

- ``check_spec(spec, rules)``: every field of a job spec (lengths, finite numbers in range,
  names without control characters, array size counted without expanding it, reserved
  environment variables, mounts and images against the admin's rules).
- ``check_message(msg)``: the shape of any protobuf request (string lengths and control
  characters, finite floats, list and map sizes), walked through its descriptor.
- ``check_job_ids``, ``check_text``: ids and free text of requests.
- ``normal_name``, ``normal_names``, ``normal_flags``: the one normalisation of request values
  (stripped; flags upper-cased), applied before any permission check so that the value
  checked is the value stored.
- ``check_node_name``, ``check_labels``, ``check_host_id``, ``check_page_token``,
  ``check_shm``: node names (as agents register), admin labels, uids/gids, listing tokens and
  the shared-memory size.

Errors are ``SpecError(field, message)``: the field's dotted path and what is allowed. The
mount rules (``check_mount_source``) are also what the agent applies before a launch, there
with symbolic links resolved on the node.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rota.destinations import parse_networks, url_refusal
from rota.jobends import NOTIFY_EVENTS, pattern_problem, url_problem

if TYPE_CHECKING:
    from rota.jobspec import JobSpec

DEFAULT_MAX_ARRAY_SIZE = 10_000
HARD_MAX_ARRAY_SIZE = 1_000_000  # the largest max_array_size a scheduler may be given
MAX_NAME = 128
MAX_IMAGE = 512
MAX_COMMAND_ARGS = 4096
MAX_COMMAND_BYTES = 256 * 1024
MAX_ENV = 1024
MAX_ENV_KEY = 256
MAX_ENV_VALUE = 32 * 1024
MAX_LABELS = 64
MAX_LABEL = 253
MAX_MOUNTS = 64
MAX_PATH = 4096
MAX_REASON = 1024
MAX_STRING = 4096  # any other string of a request
MAX_LIST = 100_000  # any other repeated field or map of a request
MAX_GPUS = 1024
MAX_CPUS = 100_000.0
MAX_BYTES = 2**50  # 1 PiB: memory, GPU memory
MAX_SHM = 64 * 2**30  # shm_size without resources.memory (with it: at most that memory)
MAX_HOST_ID = 2**32 - 1  # uid, gid
MAX_NODES = 10_000
MAX_TIME_LIMIT = 10 * 365 * 86400.0
MAX_TIME = 253402300799.0  # 9999-12-31T23:59:59Z
INT32 = (-(2**31), 2**31 - 1)
PULL_POLICIES = ("missing", "always", "never")
RESERVED_ENV = ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
FORBIDDEN_MOUNTS = ("/etc", "/root", "/proc", "/sys", "/dev", "/boot", "/var/run", "/run")
DOCKER_SOCKET = "docker.sock"
# Per-field string limits of requests (by field name); anything else gets MAX_STRING.
_FIELD_LIMITS = {
    "command": MAX_COMMAND_BYTES,
    "env": MAX_ENV_VALUE,
    "reason": MAX_REASON,
    "page_token": 32,
}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]*$")
_JOB_ID = re.compile(r"[0-9]{1,18}(_[0-9]{1,9})?")  # ids fit a 64-bit integer
_PAGE_TOKEN = re.compile(r"[0-9]{1,18}")
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")  # fullmatch: agents' --node too
LABEL_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,252}")  # fullmatch: agents' --label too
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_EXCEPT_SPACE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ARRAY = re.compile(r"^(?P<body>[0-9,\-:]+)(?:%(?P<limit>\d+))?$")


class SpecError(ValueError):
    """An input field is invalid; ``field`` names it (dotted path)."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


@dataclass(frozen=True)
class Rules:
    """What a cluster accepts. ``allowed_mounts`` None: not known here (the CLI), so only the
    always-refused paths are checked; empty: no bind mount is allowed. ``allowed_images``
    empty: any image; else shell patterns (``registry.lab/*``). ``allowed_registries``: the
    registries an image may come from (``image_registry``), ``*`` any. ``webhook_networks`` None: not
    known here (the CLI); else a webhook URL whose host is an IP address must be public or in
    one of these networks (``rota.destinations``)."""

    max_array_size: int = DEFAULT_MAX_ARRAY_SIZE
    max_jobs_per_submit: int = 1000
    max_ids_per_request: int = 10_000
    allowed_mounts: tuple[str, ...] | None = None
    allowed_images: tuple[str, ...] = ()
    allowed_registries: tuple[str, ...] = ("*",)
    webhook_networks: tuple[str, ...] | None = None


# What a client checks before sending: the scheduler's own limits (max_array_size, allowed
# mounts and images) are not known there, so only what no scheduler accepts is refused.
CLIENT_RULES = Rules(max_array_size=HARD_MAX_ARRAY_SIZE)


# ---------------------------------------------------------------- small checks


def check_text(field: str, value: str, max_len: int = MAX_STRING, multiline: bool = False) -> None:
    """At most ``max_len`` characters and no control characters (tabs and newlines only when
    ``multiline``)."""
    if len(value) > max_len:
        raise SpecError(field, f"is {len(value)} characters long; at most {max_len} are allowed")
    pattern = _CONTROL_EXCEPT_SPACE if multiline else _CONTROL
    if pattern.search(value):
        raise SpecError(field, "must not contain control characters")


def check_name(field: str, value: str, max_len: int = MAX_NAME) -> None:
    """Empty, or up to ``max_len`` letters, digits and ``_ . : + -`` starting alphanumeric."""
    if not value:
        return
    if len(value) > max_len or not _NAME.match(value):
        raise SpecError(
            field,
            f"use up to {max_len} letters, digits and _ . : + - (starting alphanumeric)",
        )


def check_number(field: str, value: float, low: float, high: float) -> None:
    """A finite number with ``low <= value <= high``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(field, f"expected a number, got {value!r}")
    if not math.isfinite(value):
        raise SpecError(field, f"must be a finite number, got {value!r}")
    if not low <= value <= high:
        raise SpecError(field, f"must be between {low:g} and {high:g}, got {value:g}")


def check_job_ids(field: str, ids: Sequence[str], rules: Rules) -> None:
    """At most ``max_ids_per_request`` ids, each like ``123`` or ``123_4``."""
    if len(ids) > rules.max_ids_per_request:
        raise SpecError(
            field, f"{len(ids)} ids given; at most {rules.max_ids_per_request} per request"
        )
    for i, job_id in enumerate(ids):
        if not is_job_id(job_id):
            raise SpecError(f"{field}[{i}]", f"{job_id[:40]!r} is not a job id like 123 or 123_4")


def is_job_id(text: str) -> bool:
    """``text`` is a job id like ``123`` or ``123_4`` (ASCII digits, at most 18 and 9 of them,
    so it fits the database's 64-bit integers)."""
    return _JOB_ID.fullmatch(text) is not None


def check_page_token(field: str, token: str) -> None:
    """Empty, or a job listing's ``next_page_token``: up to 18 digits."""
    if token and not _PAGE_TOKEN.fullmatch(token):
        raise SpecError(field, "must be a token from an earlier answer (up to 18 digits)")


def check_node_name(field: str, value: str) -> None:
    """A node name as agents register: 1 to 253 letters, digits and ``. _ -``, starting
    alphanumeric (so never a path like ``../x``)."""
    if not NODE_NAME.fullmatch(value):
        raise SpecError(
            field,
            f"{value[:80]!r} is not a node name: use 1 to 253 letters, digits and . _ - "
            "(starting alphanumeric)",
        )


def check_labels(field: str, labels: Mapping[str, str]) -> None:
    """At most ``MAX_LABELS`` labels; keys like ``rack`` or ``lab.example/ib`` (letters,
    digits, ``. _ / -``, starting alphanumeric), values up to ``MAX_LABEL`` characters."""
    if len(labels) > MAX_LABELS:
        raise SpecError(field, f"{len(labels)} labels; at most {MAX_LABELS} are allowed")
    for key, value in labels.items():
        if not LABEL_KEY.fullmatch(key):
            raise SpecError(
                f"{field} key",
                f"{key[:80]!r}: use 1 to 253 letters, digits and . _ / - (starting alphanumeric)",
            )
        check_text(f"{field}.{key}", value, MAX_LABEL)


def check_host_id(field: str, value: int) -> None:
    """A uid or gid: 0 to 2**32-1."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_HOST_ID:
        raise SpecError(field, f"must be a uid/gid from 0 to {MAX_HOST_ID}, got {value!r}")


def normal_name(value: str) -> str:
    """A name as it is checked and stored: without surrounding white space."""
    return value.strip()


def normal_names(values: Iterable[str]) -> tuple[str, ...]:
    """Names as they are checked and stored: each stripped, empty ones dropped, each once."""
    return tuple(dict.fromkeys(v for v in (normal_name(x) for x in values) if v))


def normal_flags(values: Iterable[str]) -> tuple[str, ...]:
    """Flags as they are checked and stored: each stripped and upper-cased, empty ones
    dropped, each once, in order. Every check of a flag uses this value, never the raw one."""
    return tuple(dict.fromkeys(v for v in (x.strip().upper() for x in values) if v))


def check_shm(field: str, shm_size: int, memory: int) -> None:
    """``shm_size`` (bytes) at most the job's ``memory`` when it is set (/dev/shm is charged
    to it), else at most ``MAX_SHM`` (64 GiB); the 2 GiB default always passes."""
    from rota.jobspec import DEFAULT_SHM_SIZE  # jobspec imports this module

    check_number(field, shm_size, 0, MAX_BYTES)
    if shm_size <= DEFAULT_SHM_SIZE:
        return
    if memory and shm_size > memory:
        raise SpecError(
            field,
            f"{shm_size} bytes is more than the job's resources.memory ({memory} bytes); "
            "/dev/shm counts against it",
        )
    if not memory and shm_size > MAX_SHM:
        raise SpecError(
            field,
            f"{shm_size} bytes is more than {MAX_SHM // 2**30} GiB; set resources.memory "
            "to ask for more",
        )


def array_size(text: str) -> int:
    """How many tasks an array expression names at most, counted without expanding it.

    ValueError when it is not ``0-99``, ``0-15:4`` or ``1,3,5`` with an optional ``%LIMIT``.
    """
    m = _ARRAY.match(text.replace(" ", ""))
    if not m:
        raise ValueError(
            f"expected a range like 0-99, 0-15:4 or 1,3,5 with optional %LIMIT, got {text!r}"
        )
    total = 0
    for part in m.group("body").split(","):
        step = 1
        if ":" in part:
            part, step_text = part.split(":", 1)
            if not step_text.isdigit() or int(step_text) < 1:
                raise ValueError(f"bad step in array {text!r}")
            step = int(step_text)
        if "-" in part:
            lo_text, hi_text = part.split("-", 1)
            if not lo_text.isdigit() or not hi_text.isdigit() or int(lo_text) > int(hi_text):
                raise ValueError(f"bad range {part!r} in array {text!r}")
            total += len(range(int(lo_text), int(hi_text) + 1, step))
        elif part.isdigit():
            total += 1
        else:
            raise ValueError(f"bad element {part!r} in array {text!r}")
    return total


# ---------------------------------------------------------------- mounts and images


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


def mount_refusal(path: str, allowed: Iterable[str] | None) -> str:
    """Why ``path`` (absolute, normalised) may not be bind-mounted; "" when it may.

    Refused always: ``/``, the Docker socket, and anything under, or holding, ``/etc``,
    ``/root``, ``/proc``, ``/sys``, ``/dev``, ``/boot``, ``/var/run`` and ``/run``. Otherwise the
    path must be under one of ``allowed`` (when given).
    """
    if path == "/":
        return "mounting / is never allowed"
    if os.path.basename(path) == DOCKER_SOCKET:
        return "mounting the Docker socket is never allowed"
    for forbidden in FORBIDDEN_MOUNTS:
        if _under(path, forbidden) or _under(forbidden, path):
            return f"mounting {path} is never allowed (it is or holds {forbidden})"
    if allowed is None:
        return ""
    prefixes = [os.path.normpath(p) for p in allowed]
    if not any(_under(path, p) for p in prefixes):
        where = ", ".join(prefixes) if prefixes else "none: bind mounts are disabled"
        return f"{path} is not under an allowed mount prefix (allowed_mounts: {where})"
    return ""


def check_mount_source(field: str, source: str, allowed: Iterable[str] | None) -> str:
    """The normalised source path, or SpecError: relative, ``..`` or a refused path."""
    if not source.startswith("/"):
        raise SpecError(field, f"must be an absolute path, got {source[:80]!r}")
    if ".." in source.split("/"):
        raise SpecError(field, "must not contain '..'")
    path = os.path.normpath(source)
    problem = mount_refusal(path, allowed)
    if problem:
        raise SpecError(field, problem)
    return path


def resolve_mount_source(field: str, source: str, allowed: Iterable[str] | None) -> str:
    """On the node: ``check_mount_source``, then the same rules for the path with every
    symbolic link resolved (and never a socket). Returns the resolved path to mount; a path
    that cannot be looked at (a link loop, no permission) is a SpecError too."""
    check_mount_source(field, source, allowed)
    try:
        real = os.path.realpath(source)
        problem = mount_refusal(real, allowed)
        if problem:
            raise SpecError(field, f"{source} resolves to {real}: {problem}")
        if stat.S_ISSOCK(os.stat(real).st_mode):
            raise SpecError(field, f"{source} is a socket; sockets are never mounted")
    except FileNotFoundError:
        pass  # reported by whoever opens it (the bind mount, the output file)
    except OSError as exc:
        raise SpecError(field, f"{source} cannot be resolved on the node: {exc.strerror}") from None
    return real


DEFAULT_REGISTRIES = ("docker.io", "nvcr.io", "ghcr.io")
"""Where images may come from unless an admin says otherwise (``allowed_registries``)."""
_DOCKER_HUB = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


def image_registry(image: str) -> str:
    """The registry host of an image reference, as Docker reads it: the first path part when
    it has a dot or a port or is ``localhost``, else Docker Hub (``docker.io``)."""
    first, slash, _ = image.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        return "docker.io"
    host = first.lower()
    return "docker.io" if host in _DOCKER_HUB else host


def check_image(
    field: str, image: str, allowed: Sequence[str], registries: Sequence[str] = ("*",)
) -> None:
    """A plausible image reference from one of ``registries`` (``*``: any); with an
    allow-list of patterns, one that matches a pattern of it."""
    if not image.strip():
        raise SpecError(field, "must not be empty")
    check_text(field, image, MAX_IMAGE)
    if any(c.isspace() for c in image):
        raise SpecError(field, "must not contain spaces")
    registry = image_registry(image)
    if "*" not in registries and registry not in {r.lower() for r in registries}:
        raise SpecError(
            field,
            f"images from {registry} are not allowed here "
            f"(allowed_registries: {', '.join(registries) or 'none'})",
        )
    if allowed and not any(fnmatch.fnmatchcase(image, p) for p in allowed):
        raise SpecError(
            field, f"image {image!r} is not allowed here (allowed_images: {', '.join(allowed)})"
        )


# ---------------------------------------------------------------- the job spec


def _check_map(
    field: str, values: Mapping[str, str], max_items: int, max_key: int, max_value: int
) -> None:
    if len(values) > max_items:
        raise SpecError(field, f"{len(values)} entries; at most {max_items} are allowed")
    for key, value in values.items():
        check_text(f"{field} key", key, max_key)
        check_text(f"{field}.{key[:40]}", value, max_value, multiline=True)


def check_spec(spec: JobSpec, rules: Rules, prefix: str = "") -> None:
    """Every field of ``spec`` against ``rules``; SpecError naming the first bad one."""
    from rota.jobspec import parse_dependency  # jobspec imports this module

    def at(name: str) -> str:
        return f"{prefix}{name}"

    for name in ("name", "account", "qos", "reservation"):
        check_name(at(name), getattr(spec, name))
    check_image(at("image"), spec.image, rules.allowed_images, rules.allowed_registries)
    if not spec.command:
        raise SpecError(at("command"), "is required")
    if len(spec.command) > MAX_COMMAND_ARGS:
        raise SpecError(at("command"), f"at most {MAX_COMMAND_ARGS} arguments are allowed")
    if sum(len(arg) for arg in spec.command) > MAX_COMMAND_BYTES:
        raise SpecError(at("command"), f"at most {MAX_COMMAND_BYTES} characters in all")
    for i, arg in enumerate(spec.command):
        if "\x00" in arg:
            raise SpecError(at(f"command[{i}]"), "must not contain NUL characters")
    check_number(at("resources.gpus"), spec.gpus, 0, MAX_GPUS)
    check_text(at("resources.gpu_type"), spec.gpu_type, MAX_NAME)
    check_number(at("resources.cpus"), spec.cpus, 0, MAX_CPUS)
    for name, value in (
        ("resources.gpu_memory", spec.gpu_memory),
        ("resources.memory", spec.memory),
    ):
        check_number(at(name), value, 0, MAX_BYTES)
    check_shm(at("shm_size"), spec.shm_size, spec.memory)
    check_number(at("nodes"), spec.nodes, 1, MAX_NODES)
    check_number(at("time_limit"), spec.time_limit, 0, MAX_TIME_LIMIT)
    check_number(at("priority"), spec.priority, *INT32)
    check_number(at("begin"), spec.begin_time, 0, MAX_TIME)
    if spec.dependency:
        check_text(at("dependency"), spec.dependency)
        try:
            parse_dependency(spec.dependency)
        except ValueError as exc:
            raise SpecError(at("dependency"), str(exc)) from None
    if spec.array:
        check_text(at("array"), spec.array, MAX_NAME)
        try:
            tasks = array_size(spec.array)
        except ValueError as exc:
            raise SpecError(at("array"), str(exc)) from None
        if tasks > rules.max_array_size:
            raise SpecError(
                at("array"),
                f"names {tasks} tasks; at most {rules.max_array_size} are allowed "
                "(scheduler setting max_array_size)",
            )
    _check_map(at("node_selector"), spec.node_selector, MAX_LABELS, MAX_LABEL, MAX_LABEL)
    _check_map(at("env"), spec.env, MAX_ENV, MAX_ENV_KEY, MAX_ENV_VALUE)
    for key in spec.env:
        if not _ENV_KEY.match(key):
            raise SpecError(
                at("env"), f"{key[:40]!r} is not a variable name (letters, digits, _ . -)"
            )
        if key in RESERVED_ENV:
            raise SpecError(
                at(f"env.{key}"), "is set by rota from the job's GPUs and cannot be overridden"
            )
    if len(spec.mounts) > MAX_MOUNTS:
        raise SpecError(at("mounts"), f"at most {MAX_MOUNTS} mounts are allowed")
    for i, mount in enumerate(spec.mounts):
        check_text(at(f"mounts[{i}].source"), mount.source, MAX_PATH)
        check_text(at(f"mounts[{i}].target"), mount.target, MAX_PATH)
        check_mount_source(at(f"mounts[{i}].source"), mount.source, rules.allowed_mounts)
        if not mount.target.startswith("/") or ".." in mount.target.split("/"):
            raise SpecError(at(f"mounts[{i}].target"), "must be an absolute path without '..'")
    if spec.workdir:
        check_text(at("workdir"), spec.workdir, MAX_PATH)
        if not spec.workdir.startswith("/"):
            raise SpecError(at("workdir"), "must be an absolute path")
    if spec.pull not in PULL_POLICIES:
        raise SpecError(at("pull"), f"expected one of {', '.join(PULL_POLICIES)}")
    _check_job_ends(spec, rules, at)


def _check_job_ends(spec: JobSpec, rules: Rules, at: Callable[[str], str]) -> None:
    """The webhook (``notify``) and the output patterns (``output``, ``error``)."""
    if spec.notify_url or spec.notify_on:
        problem = url_problem(spec.notify_url) if spec.notify_url else "is required with on"
        if not problem and rules.webhook_networks is not None:
            problem = url_refusal(spec.notify_url, parse_networks(rules.webhook_networks))
        if problem:
            raise SpecError(at("notify.url"), problem)
    for name in spec.notify_on:
        if name not in NOTIFY_EVENTS:
            raise SpecError(
                at("notify.on"), f"unknown end {name[:40]!r}; allowed: {', '.join(NOTIFY_EVENTS)}"
            )
    for field_name, pattern in (("output", spec.output), ("error", spec.error)):
        if not pattern:
            continue
        check_text(at(field_name), pattern, MAX_PATH)
        problem = pattern_problem(pattern)
        if problem:
            raise SpecError(at(field_name), problem)
        if rules.allowed_mounts is not None or pattern.startswith("/"):
            # a client's job file may say a path relative to where gsub runs (it resolves it)
            check_mount_source(at(field_name), pattern, rules.allowed_mounts)


# ---------------------------------------------------------------- any request


def check_message(msg: Any, prefix: str = "") -> None:
    """The shape of a protobuf request (any message; walked through its descriptor): strings within their field's limit and free of control
    characters (tabs and newlines allowed in commands and environment values), finite floats,
    repeated fields and maps of at most ``MAX_LIST`` entries, nested messages likewise."""
    for fd, value in msg.ListFields():
        where = f"{prefix}{fd.name}"
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            if len(value) > MAX_LIST:
                raise SpecError(where, f"at most {MAX_LIST} entries are allowed")
            value_fd = fd.message_type.fields_by_name["value"]
            for key, item in value.items():
                _check_scalar(f"{where} key", key, fd.name, key=True)
                if value_fd.message_type is not None:
                    check_message(item, f"{where}.{key}.")
                else:
                    _check_scalar(f"{where}.{key}", item, fd.name)
            continue
        items = list(value) if _repeated(fd) else [value]
        if len(items) > MAX_LIST:
            raise SpecError(where, f"at most {MAX_LIST} entries are allowed")
        for i, item in enumerate(items):
            label = f"{where}[{i}]" if _repeated(fd) else where
            if fd.message_type is not None:
                check_message(item, f"{label}.")
            else:
                _check_scalar(label, item, fd.name)


def _repeated(fd: Any) -> bool:
    return bool(fd.is_repeated)


def _check_scalar(where: str, value: Any, name: str, key: bool = False) -> None:
    if isinstance(value, str):
        limit = MAX_STRING if key else _FIELD_LIMITS.get(name, MAX_STRING)
        check_text(where, value, limit, multiline=not key and name in ("command", "env"))
    elif isinstance(value, float) and not math.isfinite(value):
        raise SpecError(where, f"must be a finite number, got {value!r}")
