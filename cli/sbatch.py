"""Batch scripts with ``#SBATCH`` directives, translated into rota job files (pure: no I/O).

``translate(text, ...)`` reads the directives at the top of a script (as ``sbatch`` does: up to
the first line that is neither blank nor a comment) and returns the job-file mapping that
``rota.jobspec.parse_job_file`` validates, or raises ``ScriptError`` naming the directive.

The container command is the whole script, unchanged, run by its ``#!`` interpreter
(``/bin/sh`` when it has none) as ``[interpreter, "-c", script]``; ``slurm_env: true`` has the
scheduler set SLURM's job variables in the container (``SLURM_JOB_ID`` ...), so scripts in any
language that read ``$SLURM_ARRAY_TASK_ID`` run as they are. ``#ROTA key=value`` lines set what
``#SBATCH`` cannot say, ``image`` first of all.

The options and SLURM's value spellings are read by ``sbatch_options.py``; this module maps
them to job-file fields.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import yaml

from rota.cli.sbatch_options import (
    ScriptError,
    gpu_count,
    gres_gpus,
    positive,
    slurm_begin,
    slurm_export,
    slurm_memory,
    split_options,
)

SCRIPT_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm")

# The order of fields in a translated job file: the README's, with the long command last.
FIELD_ORDER = (
    "name",
    "image",
    "resources",
    "nodes",
    "time_limit",
    "account",
    "qos",
    "priority",
    "preemptible",
    "requeue",
    "dependency",
    "begin",
    "array",
    "reservation",
    "exclusive",
    "hold",
    "env",
    "mounts",
    "workdir",
    "shm_size",
    "pull",
    "output",
    "error",
    "notify",
    "slurm_env",
    "command",
)
RESOURCE_ORDER = ("gpus", "gpu_type", "gpu_memory", "cpus", "memory")


@dataclass
class BatchJob:
    """A translated script: the job-file mapping and which directive set each field (to name
    it in errors)."""

    job: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)

    def directive_for(self, field_name: str) -> str | None:
        """The directive that set a job-file field (``resources.gpus`` -> ``--gres``)."""
        return self.origins.get(field_name) or self.origins.get(field_name.split(".")[0])


def is_batch_script(name: str, text: str) -> bool:
    """A script, not YAML: a script suffix, a ``#!`` line, or a ``#SBATCH``/``#ROTA`` line."""
    if name.endswith(SCRIPT_SUFFIXES) or text.startswith("#!"):
        return True
    return any(_directive(line) for line in text.splitlines())


def _directive(line: str) -> str | None:
    stripped = line.strip()
    for prefix in ("#SBATCH", "#ROTA"):
        if stripped.startswith(prefix) and stripped[len(prefix) : len(prefix) + 1] in (" ", "\t"):
            return prefix
    return None


ROTA_KEYS = {
    "image": "image",
    "mount": "mounts",
    "shm_size": "shm_size",
    "pull": "pull",
    "preemptible": "preemptible",
    "priority": "priority",
    "gpu_type": "resources.gpu_type",
    "gpu_memory": "resources.gpu_memory",
    "workdir": "workdir",
    "env": "env",
}


def _interpreter(text: str) -> list[str]:
    """The ``#!`` command (``/bin/sh`` without one)."""
    first = text.splitlines()[0] if text else ""
    words = first[2:].split() if first.startswith("#!") else []
    return words or ["/bin/sh"]


def header_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the directives: those before the first command line."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        if _directive(line):
            out.append((number, stripped))
    return out


def _rota_value(raw: str) -> Any:
    value = yaml.safe_load(raw) if raw.strip() else ""
    return raw if isinstance(value, dict | list) or value is None else value


def translate(
    text: str,
    default_image: str = "",
    environ: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> BatchJob:
    """Translate a batch script; raise ScriptError("line N: ...") naming the directive."""
    environ = environ or {}
    now = now or datetime.now().astimezone()
    batch = BatchJob(job={})
    job = batch.job
    resources: dict[str, Any] = {}
    gpus_total: tuple[str, int] | None = None
    ntasks: int | None = None
    for number, line in header_lines(text):
        prefix = _directive(line)
        try:
            words = shlex.split(line[len(prefix or "") :], comments=True)
            if prefix == "#ROTA":
                _rota_directive(batch, resources, words)
                continue
            for option, value in split_options(words):
                handler = _HANDLERS.get(option)
                if handler is not None:
                    handler(batch, resources, value or "", environ, now)
                elif option == "gpus":
                    gpus_total = gpu_count(option, value or "")
                    batch.origins["resources.gpus"] = "--gpus"
                elif option == "ntasks":
                    ntasks = positive(option, value or "")
        except ScriptError as exc:
            raise ScriptError(f"line {number}: {exc}") from None
        except ValueError as exc:  # shlex: an unclosed quote
            raise ScriptError(f"line {number}: {exc}") from None
    nodes = int(job.get("nodes", 1))
    if gpus_total is not None:
        kind, total = gpus_total
        if total % nodes:
            raise ScriptError(
                f"--gpus={total} does not divide evenly over {nodes} nodes; "
                f"use --gpus-per-node (rota gives every node the same number of GPUs)"
            )
        resources["gpus"] = total // nodes
        if kind:
            resources["gpu_type"] = kind
    if ntasks is not None and ntasks != nodes:
        raise ScriptError(
            f"--ntasks={ntasks}: rota runs one container per node, so --ntasks must equal "
            f"--nodes ({nodes}); start several processes per node with torchrun or similar"
        )
    if resources:
        job["resources"] = {k: resources[k] for k in RESOURCE_ORDER if k in resources}
    if "image" not in job:
        if not default_image:
            raise ScriptError(
                "no container image: add '#ROTA image=IMAGE' to the script, or set "
                "default_image in the CLI config or ROTA_DEFAULT_IMAGE"
            )
        job["image"] = default_image
    job["slurm_env"] = True
    job["command"] = [*_interpreter(text), "-c", text]
    batch.job = {k: job[k] for k in FIELD_ORDER if k in job}
    return batch


def _rota_directive(batch: BatchJob, resources: dict[str, Any], words: list[str]) -> None:
    for word in words:
        key, eq, raw = word.partition("=")
        if not eq or key not in ROTA_KEYS:
            raise ScriptError(
                f"unknown #ROTA directive {key!r}; use KEY=VALUE with KEY one of "
                f"{', '.join(ROTA_KEYS)}"
            )
        target = ROTA_KEYS[key]
        batch.origins[target] = f"#ROTA {key}"
        if key == "mount":
            batch.job.setdefault("mounts", []).append(raw)
        elif key == "env":
            name, has_value, val = raw.partition("=")
            if not has_value:
                raise ScriptError(f"#ROTA env: expected env=NAME=VALUE, got {raw!r}")
            batch.job.setdefault("env", {})[name] = val
        elif target.startswith("resources."):
            resources[target.split(".", 1)[1]] = _rota_value(raw)
        else:
            batch.job[target] = _rota_value(raw)


Handler = Callable[[BatchJob, dict[str, Any], str, Mapping[str, str], datetime], None]


def _set(target: str, option: str, convert: Callable[[str], Any] = str) -> Handler:
    def handle(
        batch: BatchJob, resources: dict[str, Any], value: str, _e: object, _n: object
    ) -> None:
        where = resources if target.startswith("resources.") else batch.job
        where[target.removeprefix("resources.")] = convert(value)
        batch.origins[target] = f"--{option}"

    return handle


def _gres(batch: BatchJob, resources: dict[str, Any], value: str, *_: object) -> None:
    kind, count = gres_gpus(value)
    resources["gpus"] = count
    if kind:
        resources["gpu_type"] = kind
    batch.origins["resources.gpus"] = batch.origins["resources.gpu_type"] = "--gres"


def _gpus_per_node(batch: BatchJob, resources: dict[str, Any], value: str, *_: object) -> None:
    kind, count = gpu_count("gpus-per-node", value)
    resources["gpus"] = count
    if kind:
        resources["gpu_type"] = kind
    batch.origins["resources.gpus"] = batch.origins["resources.gpu_type"] = "--gpus-per-node"


def _begin(
    batch: BatchJob, _r: dict[str, Any], value: str, _e: Mapping[str, str], now: datetime
) -> None:
    batch.job["begin"] = slurm_begin(value, now)
    batch.origins["begin"] = "--begin"


def _export(
    batch: BatchJob, _r: dict[str, Any], value: str, environ: Mapping[str, str], _n: object
) -> None:
    batch.job.setdefault("env", {}).update(slurm_export(value, environ))
    batch.origins["env"] = "--export"


def _ntasks_per_node(_b: BatchJob, _r: dict[str, Any], value: str, *_: object) -> None:
    if positive("ntasks-per-node", value) != 1:
        raise ScriptError(
            f"--ntasks-per-node={value}: rota runs one container per node; start several "
            f"processes per node with torchrun or similar"
        )


def _flag(target: str, option: str, value: bool) -> Handler:
    def handle(batch: BatchJob, _r: dict[str, Any], _v: str, _e: object, _n: object) -> None:
        batch.job[target] = value
        batch.origins[target] = f"--{option}"

    return handle


_HANDLERS: dict[str, Handler] = {
    "job-name": _set("name", "job-name"),
    "gres": _gres,
    "gpus-per-node": _gpus_per_node,
    "time": _set("time_limit", "time"),
    "nodes": _set("nodes", "nodes", lambda v: positive("nodes", v)),
    "cpus-per-task": _set("resources.cpus", "cpus-per-task", lambda v: positive("cpus", v)),
    "mem": _set("resources.memory", "mem", slurm_memory),
    "output": _set("output", "output"),
    "error": _set("error", "error"),
    "array": _set("array", "array"),
    "dependency": _set("dependency", "dependency"),
    "reservation": _set("reservation", "reservation"),
    "account": _set("account", "account"),
    "qos": _set("qos", "qos"),
    "begin": _begin,
    "export": _export,
    "chdir": _set("workdir", "chdir"),
    "ntasks-per-node": _ntasks_per_node,
    "hold": _flag("hold", "hold", True),
    "exclusive": _flag("exclusive", "exclusive", True),
    "requeue": _flag("requeue", "requeue", True),
    "no-requeue": _flag("requeue", "no-requeue", False),
}


def dump_job(job: Mapping[str, Any]) -> str:
    """The job file as YAML: keys in the order given, multi-line strings as ``|`` blocks."""

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump(dict(job), Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)
