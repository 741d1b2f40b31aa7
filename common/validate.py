"""The job spec's checks, shared by the CLI and the scheduler: ``check_spec(spec, rules)``.

Every field of a job spec (lengths, finite numbers in range, names without control characters,
array size counted without expanding it, reserved environment variables, mounts and images
against the admin's rules) is checked here before anything is stored or expanded. ``Rules`` say
what a cluster accepts; ``CLIENT_RULES`` what no scheduler accepts (the CLI's check before
sending). Errors are ``SpecError(field, message)``: the field's dotted path and what is
allowed. The small checks of any request value are ``rota.inputs``; mounts, images and
registries ``rota.allowlists``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rota.allowlists import check_image, check_mount_source
from rota.constraint import ConstraintError, check_counts, parse_constraint
from rota.destinations import parse_networks, url_refusal
from rota.hostlist import expand
from rota.inputs import (
    MAX_COMMAND_BYTES,
    MAX_ENV_VALUE,
    MAX_LABEL,
    MAX_LABELS,
    MAX_NAME,
    MAX_PATH,
    SpecError,
    check_account,
    check_name,
    check_node_name,
    check_number,
    check_text,
)
from rota.jobends import NOTIFY_EVENTS, pattern_problem, url_problem
from rota.jobmail import mail_type_problem, mail_user_problem

if TYPE_CHECKING:
    from rota.jobspec import JobSpec

DEFAULT_MAX_ARRAY_SIZE = 10_000
HARD_MAX_ARRAY_SIZE = 1_000_000  # the largest max_array_size a scheduler may be given
MAX_COMMAND_ARGS = 4096
MAX_ENV = 1024
MAX_ENV_KEY = 256
MAX_MOUNTS = 64
MAX_GPUS = 1024
MAX_CPUS = 100_000.0
MAX_BYTES = 2**50  # 1 PiB: memory, GPU memory
MAX_SHM = 64 * 2**30  # shm_size without resources.memory (with it: at most that memory)
MAX_NODES = 10_000
MAX_TASKS_PER_NODE = 256  # srun tasks on one node (one docker exec each)
MAX_TIME_LIMIT = 10 * 365 * 86400.0
MAX_TIME = 253402300799.0  # 9999-12-31T23:59:59Z
INT32 = (-(2**31), 2**31 - 1)
PULL_POLICIES = ("missing", "always", "never")
OPEN_MODES = ("append", "truncate")  # sbatch --open-mode; "" = the scheduler's job_file_append
RESERVED_ENV = ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
HOST_NAME = re.compile(r"^(?=.{1,253}\Z)[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?\Z")
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*\Z")
_ARRAY = re.compile(r"^(?P<body>[0-9,\-:]+)(?:%(?P<limit>[0-9]+))?\Z")


@dataclass(frozen=True)
class Rules:
    """What a cluster accepts. ``allowed_mounts`` None: not known here (the CLI), so only the
    always-refused paths are checked; empty: no bind mount is allowed. ``allowed_images``
    empty: any image; else shell patterns (``registry.lab/*``). ``allowed_registries``: the
    registries an image may come from (``image_registry``), ``*`` any. ``webhook_networks`` None: not
    known here (the CLI); else a webhook URL whose host is an IP address must be public or in
    one of these networks (``rota.destinations``). ``mail_domains`` None: not known here;
    else the domains a ``mail_user`` address may be at (``*`` any)."""

    max_array_size: int = DEFAULT_MAX_ARRAY_SIZE
    max_jobs_per_submit: int = 1000
    max_ids_per_request: int = 10_000
    allowed_mounts: tuple[str, ...] | None = None
    allowed_images: tuple[str, ...] = ()
    allowed_registries: tuple[str, ...] = ("*",)
    webhook_networks: tuple[str, ...] | None = None
    mail_domains: tuple[str, ...] | None = None


# What a client checks before sending: the scheduler's own limits (max_array_size, allowed
# mounts and images) are not known there, so only what no scheduler accepts is refused.
CLIENT_RULES = Rules(max_array_size=HARD_MAX_ARRAY_SIZE)


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
            total += (int(hi_text) - int(lo_text)) // step + 1  # no range: ids may be huge
        elif part.isdigit():
            total += 1
        else:
            raise ValueError(f"bad element {part!r} in array {text!r}")
    return total


def _check_map(
    field: str, values: Mapping[str, str], max_items: int, max_key: int, max_value: int
) -> None:
    if len(values) > max_items:
        raise SpecError(field, f"{len(values)} entries; at most {max_items} are allowed")
    for key, value in values.items():
        check_text(f"{field} key", key, max_key)
        check_text(f"{field}.{key[:40]}", value, max_value, multiline=True)


MAX_PARTITIONS = 32  # partitions one job may name


def check_partition(field: str, text: str) -> None:
    """Empty, or up to ``MAX_PARTITIONS`` names (as ``check_name``) separated by commas."""
    if not text:
        return
    names = text.split(",")
    if len(names) > MAX_PARTITIONS:
        raise SpecError(field, f"{len(names)} partitions; at most {MAX_PARTITIONS}")
    for name in names:
        if not name:
            raise SpecError(field, "partition names separated by commas, none empty (a,b)")
        check_name(field, name)


def check_hostlist(field: str, text: str) -> None:
    """Empty, or a host list (``gpu[01-03],cpu1``) of at most ``MAX_NODES`` node names."""
    if not text:
        return
    check_text(field, text)
    try:
        names = expand(text)
    except ValueError as exc:
        raise SpecError(field, f"{exc} (a host list such as gpu[01-03],cpu1)") from None
    if len(names) > MAX_NODES:
        raise SpecError(field, f"{len(names)} nodes; at most {MAX_NODES}")
    for name in names:
        check_node_name(field, name)


def check_constraint(field: str, text: str, nodes: int = 1) -> None:
    """Empty, or a node-feature expression (``rota.constraint``'s syntax and bounds) whose
    counts a job of ``nodes`` nodes can meet."""
    if not text:
        return
    try:
        parsed = parse_constraint(text)
    except ConstraintError as exc:
        raise SpecError(field, f"{text[:80]!r}: {exc}") from None
    why = check_counts(parsed, nodes)
    if why:
        raise SpecError(field, why)


def check_spec(spec: JobSpec, rules: Rules, prefix: str = "") -> None:
    """Every field of ``spec`` against ``rules``; SpecError naming the first bad one."""
    from rota.jobspec import parse_dependency  # jobspec imports this module

    def at(name: str) -> str:
        return f"{prefix}{name}"

    for wire_name, text in _texts(spec):  # every door: the gRPC interceptor's rule, HTTP too
        check_text(at(wire_name), text)
    for name in ("name", "qos", "reservation"):
        check_name(at(name), getattr(spec, name))
    check_account(at("account"), spec.account)
    check_partition(at("partition"), spec.partition)
    check_hostlist(at("nodelist"), spec.nodelist)
    check_hostlist(at("exclude"), spec.exclude)
    check_constraint(at("constraint"), spec.constraint, spec.nodes)
    problem = mail_type_problem(spec.mail_type)
    if problem:
        raise SpecError(at("mail_type"), problem)
    problem = mail_user_problem(spec.mail_user, rules.mail_domains) if spec.mail_user else ""
    if problem:
        raise SpecError(at("mail_user"), problem)
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
    if spec.signal:
        from rota.jobsignal import SIGNAL_HELP, canonical_signal

        try:
            canonical_signal(spec.signal)
        except ValueError as exc:
            raise SpecError(at("signal"), f"{exc}; expected {SIGNAL_HELP}") from None
    _check_tasks(spec, at)
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
    if spec.submit_dir:
        check_text(at("submit_dir"), spec.submit_dir, MAX_PATH)
        if not spec.submit_dir.startswith("/"):
            raise SpecError(at("submit_dir"), "must be an absolute path")
    if spec.submit_host and not HOST_NAME.match(spec.submit_host):
        raise SpecError(
            at("submit_host"), "must be a host name (letters, digits, '-', '.'; at most 253)"
        )
    if spec.pull not in PULL_POLICIES:
        raise SpecError(at("pull"), f"expected one of {', '.join(PULL_POLICIES)}")
    _check_job_ends(spec, rules, at)


_WIRE_NAMES = {
    "gpu_type": "resources.gpu_type",
    "notify_url": "notify.url",
    "notify_on": "notify.on",
}


def _texts(spec: JobSpec) -> Iterator[tuple[str, str]]:
    """Every one-line text of ``spec`` (its strings and lists of strings but the command) by
    its field's name on the wire; the command and the environment may hold tabs and newlines
    and are checked on their own."""
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        name = _WIRE_NAMES.get(f.name, f.name)
        if isinstance(value, str):
            yield name, value
        elif isinstance(value, tuple) and f.name != "command":
            yield from ((f"{name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, str))


def tasks_per_node(nodes: int, ntasks: int, ntasks_per_node: int) -> int:
    """srun's tasks on each node: ``ntasks_per_node``, else ``ntasks`` spread over the nodes
    (rounded up), else one."""
    return ntasks_per_node or -(-(ntasks or nodes) // max(nodes, 1))


def _check_tasks(spec: JobSpec, at: Callable[[str], str]) -> None:
    """The task layout: counts in range, at least one task per node, the GPUs of a node's
    tasks within the node's GPUs."""
    check_number(at("ntasks"), spec.ntasks, 0, MAX_TASKS_PER_NODE * MAX_NODES)
    check_number(at("ntasks_per_node"), spec.ntasks_per_node, 0, MAX_TASKS_PER_NODE)
    check_number(at("gpus_per_task"), spec.gpus_per_task, 0, MAX_GPUS)
    if spec.ntasks and spec.ntasks < spec.nodes:
        raise SpecError(at("ntasks"), f"{spec.ntasks} tasks cannot cover {spec.nodes} nodes")
    per_node = tasks_per_node(spec.nodes, spec.ntasks, spec.ntasks_per_node)
    if per_node > MAX_TASKS_PER_NODE:
        raise SpecError(at("ntasks"), f"at most {MAX_TASKS_PER_NODE} tasks per node")
    if spec.gpus_per_task and spec.gpus_per_task * per_node > spec.gpus:
        raise SpecError(
            at("gpus_per_task"),
            f"{per_node} task(s) per node with {spec.gpus_per_task} GPU(s) each need "
            f"{spec.gpus_per_task * per_node} GPUs per node; the job has {spec.gpus}",
        )


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
    if spec.open_mode and spec.open_mode not in OPEN_MODES:
        raise SpecError(
            at("open_mode"),
            f"unknown mode {spec.open_mode[:40]!r}; allowed: {', '.join(OPEN_MODES)}",
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
