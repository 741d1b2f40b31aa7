"""sbatch options -> job-file fields (pure). ``Request`` reads options in order (a later one wins,
so the command line, read last, wins over the script), records one warning per option rota
accepts without carrying out and one problem per option it cannot take, and ``resolve()`` turns
the per-task, per-GPU and per-CPU requests into rota's per-node resources.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rota.hostlist import expand
from rota.jobmail import mail_type_problem, normal_mail_types, not_sent
from rota.sbatch_catalog import KNOWN, NOT_HERE
from rota.sbatch_options import (
    ScriptError,
    gpu_count,
    gres_gpus,
    memory_amount,
    positive,
    rota_size,
    slurm_begin,
    slurm_export,
    split_options,
)


@dataclass
class Request:
    """The job file being built, with what each directive asked for and where it said so."""

    environ: Mapping[str, str]
    now: datetime
    job: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Requests SLURM spells per job, per task or per GPU: (per, ...) resolved in resolve().
    gpus: tuple[str, str, int] | None = None  # (node|job|task, type, count)
    cpus: tuple[str, int] | None = None  # (task|gpu, count)
    memory: tuple[str, int, str] | None = None  # (node|cpu|gpu, number, unit); number 0: none
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    ntasks_per_gpu: int | None = None
    said: dict[str, str] = field(default_factory=dict)  # request -> "line N: --option=value"
    where: str = ""

    def read(self, where: str, words: list[str]) -> None:
        """Apply one line's (or the command line's) option words."""
        options, problems = split_options(words)
        self.problems += [f"{where}: {_suggest(p)}" for p in problems]
        for option, value in options:
            self.where = f"{where}: --{option}" + ("" if value is None else f"={value}")
            try:
                _apply(self, option, value)
            except ScriptError as exc:
                self.problems.append(f"{where}: {exc}")

    def warn(self, text: str) -> None:
        self.warnings.append(f"{self.where}: {text}")

    def note(self, request: str, origin: str, *fields: str) -> None:
        self.said[request] = self.where
        for name in fields:
            self.origins[name] = f"--{origin}"

    def resolve(self) -> None:
        """Per-node resources from the task, GPU and CPU requests; problems as they come."""
        try:
            self._resolve()
        except ScriptError as exc:
            self.problems.append(str(exc))

    def _resolve(self) -> None:
        self._listed_nodes()
        nodes = int(self.job.get("nodes", 1))
        if self.ntasks_per_gpu is not None:
            self._tasks_from_gpus(nodes, self.ntasks_per_gpu)
        tasks = self._tasks_per_node(nodes)
        gpus = self._gpus_per_node(nodes, tasks)
        cpus = self._cpus_per_node(tasks, gpus)
        if self.memory is not None:
            per, number, unit = self.memory
            times = {"node": 1, "cpu": cpus or tasks, "gpu": gpus or 0}[per]
            if not times:
                raise ScriptError(f"{self.said['memory']}: needs GPUs (--gres or --gpus-*)")
            if number:
                self.resources["memory"] = rota_size(number * times, unit)

    def _listed_nodes(self) -> None:
        """As sbatch: the job gets every node ``-w`` lists, so it needs at least that many
        nodes (their count when ``-N`` is not given)."""
        try:
            listed = len(set(expand(self.job.get("nodelist", ""))))
        except ValueError:
            return  # the scheduler names what is wrong with the list
        if listed <= 1:
            return
        if "nodes" not in self.job:
            self.job["nodes"] = listed
        elif int(self.job["nodes"]) < listed:
            raise ScriptError(
                f"{self.origins['nodelist']} names {listed} nodes but "
                f"{self.origins['nodes']} asks for {self.job['nodes']}: the job gets every "
                "node listed, as with sbatch"
            )

    def _tasks_from_gpus(self, nodes: int, each: int) -> None:
        """``--ntasks-per-gpu=N`` as SLURM reads it: N tasks per GPU of a node (``--ntasks``
        wins); without a GPU request, ``--ntasks`` / N GPUs. With N = 1 every task owns its
        GPU, as SLURM's implied ``--gpu-bind=single:1``."""
        if self.gpus is None:
            if self.ntasks is None:
                raise ScriptError(f"{self.said['per-gpu']}: needs GPUs (--gres or --gpus-*)")
            self.gpus = ("job", "", -(-self.ntasks // each))
            self.said["gpus"] = self.said["per-gpu"]
        per, _kind, count = self.gpus
        if per == "task":
            return  # each task's GPUs are said already
        per_node = count if per == "node" else count // nodes
        if self.ntasks is None and self.ntasks_per_node is None:
            self.ntasks_per_node = per_node * each
        if each == 1 and (self.ntasks_per_node or -(-(self.ntasks or 1) // nodes)) <= per_node:
            self.job["gpus_per_task"] = 1
        elif each > 1:
            self.warnings.append(
                f"{self.said['per-gpu']}: tasks share their GPUs: rota binds a GPU to one task only"
            )

    def _tasks_per_node(self, nodes: int) -> int:
        if self.ntasks is not None and self.ntasks < nodes:
            raise ScriptError(f"{self.said['tasks']}: fewer tasks than the {nodes} nodes")
        if self.ntasks is not None:
            self.job["ntasks"] = self.ntasks
        if self.ntasks_per_node is not None:
            self.job["ntasks_per_node"] = self.ntasks_per_node
        return self.ntasks_per_node or -(-(self.ntasks or 1) // nodes)

    def _gpus_per_node(self, nodes: int, tasks: int) -> int:
        if self.gpus is None:
            return int(self.resources.get("gpus", 0))
        per, kind, count = self.gpus
        if per == "job" and count % nodes:
            raise ScriptError(
                f"{self.said['gpus']}: {count} GPUs do not divide evenly over {nodes} nodes; "
                f"use --gpus-per-node (rota gives every node the same number of GPUs)"
            )
        total = {"node": count, "job": count // nodes, "task": count * tasks}[per]
        if per == "task":
            self.job["gpus_per_task"] = count
        self.resources["gpus"] = total
        if kind:
            self.resources["gpu_type"] = kind
        return total

    def _cpus_per_node(self, tasks: int, gpus: int) -> int:
        if self.cpus is None:
            if tasks > 1:
                self.resources["cpus"] = tasks  # SLURM's default: one CPU per task
            return int(self.resources.get("cpus", 0))
        per, count = self.cpus
        if per == "gpu" and not gpus:
            raise ScriptError(f"{self.said['cpus']}: needs GPUs (--gres or --gpus-*)")
        total = count * (tasks if per == "task" else gpus)
        self.resources["cpus"] = total
        return total


def _suggest(problem: str) -> str:
    """An unknown option with the closest real one, if any."""
    if not problem.startswith("unknown directive --"):
        return problem
    import difflib

    name = problem.removeprefix("unknown directive --")
    close = difflib.get_close_matches(name, sorted(KNOWN), n=1)
    return problem + (f" (did you mean --{close[0]}?)" if close else "")


Handler = Callable[[Request, str, str | None], None]


def _set(target: str, convert: Callable[[str], Any] = str) -> Handler:
    def handle(req: Request, option: str, value: str | None) -> None:
        req.job[target] = convert(value or "")
        req.origins[target] = f"--{option}"

    return handle


def _flag(target: str, setting: bool) -> Handler:
    def handle(req: Request, option: str, value: str | None) -> None:
        req.job[target] = setting
        req.origins[target] = f"--{option}"
        if value:  # --exclusive=user|mcs|topo
            req.warn(f"treated as --{option}: the job gets whole nodes")

    return handle


def _gpus(per: str) -> Handler:
    def handle(req: Request, option: str, value: str | None) -> None:
        if option == "gres":
            found, others = gres_gpus(value or "")
            if others:
                req.warn(f"ignored for {', '.join(others)}: rota schedules GPUs only")
            if found is None:
                return
            kind, count = found
        else:
            kind, count = gpu_count(option, value or "")
        req.gpus = (per, kind, count)
        req.note("gpus", option, "resources.gpus", "resources.gpu_type")

    return handle


def _cpus(per: str) -> Handler:
    def handle(req: Request, option: str, value: str | None) -> None:
        req.cpus = (per, positive(option, value or ""))
        req.note("cpus", option, "resources.cpus")

    return handle


def _memory(per: str) -> Handler:
    def handle(req: Request, option: str, value: str | None) -> None:
        number, unit = memory_amount(option, value or "")
        req.memory = (per, number, unit)
        req.note("memory", option, "resources.memory")
        if not number:
            req.warn(
                "no memory limit: the job may use all of a node's memory (--exclusive keeps "
                "other jobs off the node)"
            )

    return handle


def _both(first: Handler, second: Handler) -> Handler:
    """--requeue: the job may be requeued and survives a restart (``checkpointable``)."""

    def handle(req: Request, option: str, value: str | None) -> None:
        first(req, option, value)
        second(req, option, value)

    return handle


def _tasks(req: Request, option: str, value: str | None) -> None:
    if option == "ntasks-per-node":
        req.ntasks_per_node = positive(option, value or "")
    else:
        req.ntasks = positive(option, value or "")
    req.note("tasks", option)


def _per_gpu(req: Request, option: str, value: str | None) -> None:
    req.ntasks_per_gpu = positive(option, value or "")
    req.note("per-gpu", option)


def _time(req: Request, option: str, value: str | None) -> None:
    """SLURM's 0, UNLIMITED and INFINITE mean no limit; rota always has one."""
    if (value or "").strip().lower() in ("0", "unlimited", "infinite"):
        req.job.pop("time_limit", None)
        req.warn(
            "no unlimited time here: the job gets the default time limit (its partition's "
            "default_time, else the scheduler's)"
        )
        return
    req.job["time_limit"] = value or ""
    req.origins["time_limit"] = f"--{option}"


def _constraint(req: Request, option: str, value: str | None) -> None:
    """SLURM's feature expression, counts (``[a*2&b*1]``) included, as the job's
    ``constraint`` (the scheduler checks it)."""
    req.job["constraint"] = (value or "").strip()
    req.origins["constraint"] = f"--{option}"


def _container_image(req: Request, option: str, value: str | None) -> None:
    """pyxis' enroot image, ``[docker://][REGISTRY#]IMAGE[:TAG]``, as a Docker image name
    (``#ROTA image=`` wins); a squashfs file or directory is no image rota can run."""
    text = (value or "").strip().removeprefix("docker://")
    if req.origins.get("image", "").startswith("#ROTA"):
        return
    if text.startswith(("/", ".", "~")) or text.endswith(".sqsh"):
        req.warn("ignored: a squashfs file is no image rota can run; '#ROTA image=IMAGE' names one")
        return
    req.job["image"] = text.replace("#", "/", 1)
    req.origins["image"] = f"--{option}"


def _container_mounts(req: Request, option: str, value: str | None) -> None:
    """pyxis' ``SRC[:DST[:FLAGS]],...`` as rota mounts (``ro`` among the flags: read-only)."""
    for item in (value or "").split(","):
        parts = item.strip().split(":")
        if not parts[0]:
            continue
        target = parts[1] if len(parts) > 1 and parts[1] else parts[0]
        flags = set(parts[2].split("+")) if len(parts) > 2 else set()
        req.job.setdefault("mounts", []).append(
            f"{parts[0]}:{target}" + (":ro" if "ro" in flags else "")
        )
    req.origins["mounts"] = f"--{option}"


def _mail_type(req: Request, option: str, value: str | None) -> None:
    types = normal_mail_types([value or ""])
    problem = mail_type_problem(types)
    if problem:
        raise ScriptError(f"--{option}: {problem}")
    skipped = not_sent(types)
    if skipped:
        req.warn(f"ignored for {', '.join(skipped)}: rota mails BEGIN, END and FAIL only")
    req.job["mail_type"] = list(types)
    req.origins["mail_type"] = f"--{option}"


def _begin(req: Request, option: str, value: str | None) -> None:
    req.job["begin"] = slurm_begin(value or "", req.now)
    req.origins["begin"] = f"--{option}"


def _export(req: Request, option: str, value: str | None) -> None:
    req.job.setdefault("env", {}).update(slurm_export(value or "ALL", req.environ))
    if "ALL" in (v.strip() for v in (value or "ALL").split(",")):
        req.warn(
            "ALL ignored: a container never inherits your shell's environment; only the "
            "variables named (NAME or NAME=value) are set"
        )
    req.origins["env"] = f"--{option}"


def _open_mode(value: str) -> str:
    """sbatch's reading: a value starting with ``a`` appends, with ``t`` truncates."""
    mode = {"a": "append", "t": "truncate"}.get(value[:1].lower())
    if mode is None:
        raise ScriptError(f"--open-mode: expected append or truncate, got {value!r}")
    return mode


def _priority(value: str) -> int:
    if not value.strip().lstrip("-").isdigit():
        raise ScriptError(f"--priority: expected a whole number, got {value!r}")
    return int(value)


def _nodes(req: Request, option: str, value: str | None) -> None:
    """``-N N``, or SLURM's ``MIN-MAX`` range: rota gives the minimum, and says so."""
    low, dash, high = (value or "").partition("-")
    count = positive(option, low)
    if dash:
        if positive(option, high) < count:
            raise ScriptError(f"--{option}: the range {value!r} ends below its start")
        req.warn(f"the job gets {count} node(s), the minimum: rota has no node count ranges")
    req.job["nodes"] = count
    req.origins["nodes"] = f"--{option}"


def _job_name(req: Request, option: str, value: str | None) -> None:
    """SLURM takes any name; rota's are letters, digits and ``_ . : + -``: others become
    ``_``, and the name used is said."""
    name = value or ""
    usable = re.sub(r"[^A-Za-z0-9_.:+-]", "_", name)[:128]
    if usable and not usable[0].isalnum():
        usable = f"j{usable}"[:128]
    if usable != name:
        req.warn(f"named {usable!r}: rota's job names hold letters, digits and _ . : + - only")
    if usable:
        req.job["name"] = usable
        req.origins["name"] = f"--{option}"


_HANDLERS: dict[str, Handler] = {
    "job-name": _job_name,
    "time": _time,
    "nodes": _nodes,
    "output": _set("output"),
    "error": _set("error"),
    "open-mode": _set("open_mode", _open_mode),
    "array": _set("array"),
    "dependency": _set("dependency"),
    "reservation": _set("reservation"),
    "partition": _set("partition"),
    "nodelist": _set("nodelist"),
    "exclude": _set("exclude"),
    "account": _set("account"),
    "qos": _set("qos"),
    "chdir": _set("workdir"),
    "container-workdir": _set("workdir"),
    "container-image": _container_image,
    "container-mounts": _container_mounts,
    "priority": _set("priority", _priority),
    "gres": _gpus("node"),
    "gpus-per-node": _gpus("node"),
    "gpus": _gpus("job"),
    "gpus-per-task": _gpus("task"),
    "cpus-per-task": _cpus("task"),
    "cpus-per-gpu": _cpus("gpu"),
    "mem": _memory("node"),
    "mem-per-cpu": _memory("cpu"),
    "mem-per-gpu": _memory("gpu"),
    "ntasks": _tasks,
    "ntasks-per-node": _tasks,
    "ntasks-per-gpu": _per_gpu,
    "constraint": _constraint,
    "mail-type": _mail_type,
    "mail-user": _set("mail_user"),
    "begin": _begin,
    "export": _export,
    "hold": _flag("hold", True),
    "exclusive": _flag("exclusive", True),
    "requeue": _both(_flag("requeue", True), _flag("checkpointable", True)),
    "no-requeue": _both(_flag("requeue", False), _flag("checkpointable", False)),
    "signal": _set("signal"),
}


def _apply(req: Request, option: str, value: str | None) -> None:
    handler = _HANDLERS.get(option)
    if handler is not None:
        handler(req, option, value)
    elif not (option == "open-mode" and value == "truncate"):
        req.warn(NOT_HERE[option])
