"""Batch scripts with ``#SBATCH`` directives, translated into rota job files (pure: no I/O).

``translate(text, ...)`` reads the directives at the top of a script (as ``sbatch`` does: up to
the first line that is neither blank nor a comment), then sbatch options from the command line,
and returns the job-file mapping that ``rota.jobspec.parse_job_file`` validates with one warning
per option accepted but not carried out, or raises ``ScriptError`` listing every directive it
cannot take.

The container command is the whole script, unchanged, run by its ``#!`` interpreter
(``/bin/sh`` when it has none) as ``[interpreter, "-c", script]``; ``slurm_env: true`` has the
scheduler set SLURM's job variables in the container (``SLURM_JOB_ID`` ...), so scripts in any
language that read ``$SLURM_ARRAY_TASK_ID`` run as they are. ``#ROTA key=value`` lines set what
``#SBATCH`` cannot say, ``image`` first of all.

The options and SLURM's value spellings are read by ``sbatch_options.py``, every sbatch option
is listed in ``sbatch_catalog.py`` and mapped to job-file fields by ``sbatch_map.py``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from rota.plainyaml import plain_text
from rota.sbatch_map import Request
from rota.sbatch_options import ScriptError

SHELLS = frozenset({"sh", "bash", "dash", "ksh", "zsh", "ash"})
SCRIPT_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm")

# The order of fields in a translated job file: the README's, with the long command last.
FIELD_ORDER = (
    "name",
    "image",
    "resources",
    "nodes",
    "ntasks",
    "ntasks_per_node",
    "gpus_per_task",
    "time_limit",
    "account",
    "qos",
    "priority",
    "preemptible",
    "requeue",
    "checkpointable",
    "signal",
    "dependency",
    "begin",
    "array",
    "reservation",
    "partition",
    "nodelist",
    "exclude",
    "mail_type",
    "mail_user",
    "node_selector",
    "constraint",
    "exclusive",
    "hold",
    "env",
    "mounts",
    "workdir",
    "shm_size",
    "pull",
    "output",
    "error",
    "open_mode",
    "notify",
    "slurm_env",
    "command",
)
RESOURCE_ORDER = ("gpus", "gpu_type", "gpu_memory", "cpus", "memory")


@dataclass
class BatchJob:
    """A translated script: the job-file mapping, which directive set each field (to name it
    in errors) and the warnings (``line N: --opt=value: what rota does not do``)."""

    job: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

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


def _interpreter(text: str) -> tuple[list[str], bool]:
    """The ``#!`` command (``/bin/sh`` without one) and whether it is a POSIX-like shell."""
    first = text.splitlines()[0] if text else ""
    if not first.startswith("#!"):
        return ["/bin/sh"], True
    words = first[2:].split()
    if not words:
        return ["/bin/sh"], True
    program = words[-1] if words[0].endswith("/env") else words[0]
    return words, program.rsplit("/", 1)[-1] in SHELLS


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
    if not raw.strip():
        return ""
    text = plain_text(raw)  # most values (an image): no need to load yaml for them
    if text is not None:
        return text
    import yaml

    value = yaml.safe_load(raw)
    return raw if isinstance(value, dict | list) or value is None else value


def translate(
    text: str,
    default_image: str = "",
    environ: Mapping[str, str] | None = None,
    now: datetime | None = None,
    *,
    options: Sequence[str] = (),
    args: Sequence[str] = (),
    name: str = "script",
    strict: bool = False,
) -> BatchJob:
    """Translate a batch script: its directives, then ``options`` (sbatch options from the
    command line, which win), with ``args`` passed to the script (``$1``...; ``$0`` is
    ``name``). Raise ScriptError listing every problem, one ``line N: ...`` (or ``command
    line: ...``) per line; with ``strict``, every warning is a problem too."""
    req = Request(environ or {}, now or datetime.now().astimezone())
    for number, line in header_lines(text):
        prefix = _directive(line)
        where = f"line {number}"
        try:
            words = shlex.split(line[len(prefix or "") :], comments=True)
        except ValueError as exc:  # shlex: an unclosed quote
            req.problems.append(f"{where}: {exc}")
            continue
        if prefix == "#ROTA":
            try:
                _rota_directive(req, words)
            except ScriptError as exc:
                req.problems.append(f"{where}: {exc}")
        else:
            req.read(where, words)
    if options:
        req.read("command line", list(options))
    req.resolve()
    warnings = sorted(req.warnings, key=_line_number)
    problems = req.problems + [f"{w} (refused: --strict)" for w in warnings if strict]
    if problems:
        raise ScriptError("\n".join(problems))
    job = req.job
    if req.resources:
        job["resources"] = {k: req.resources[k] for k in RESOURCE_ORDER if k in req.resources}
    if "image" not in job:
        if not default_image:
            raise ScriptError(
                "no container image: add '#ROTA image=IMAGE' to the script, or set "
                "default_image in the CLI config or ROTA_DEFAULT_IMAGE"
            )
        job["image"] = default_image
    job["slurm_env"] = True
    program, is_shell = _interpreter(text)
    arguments = [name, *args] if args and is_shell else list(args)
    job["command"] = [*program, "-c", text, *arguments]
    return BatchJob({k: job[k] for k in FIELD_ORDER if k in job}, req.origins, warnings)


def read_script(
    name: str,
    text: str,
    default_image: str,
    environ: Mapping[str, str],
    cwd: str,
    *,
    options: Sequence[str] = (),
    args: Sequence[str] = (),
    strict: bool = False,
    now: datetime | None = None,
) -> BatchJob:
    """``translate`` as gsub reads a script ``name`` (``--wrap`` for a wrapped command) in
    directory ``cwd``: named as sbatch names it ("wrap", else the file's name) unless it
    says otherwise, and a relative ``--chdir`` taken from ``cwd``."""
    batch = translate(
        text,
        default_image,
        environ,
        now,
        options=options,
        args=args,
        name=PurePosixPath(name).name,
        strict=strict,
    )
    if "name" not in batch.job:  # as sbatch: "wrap", else the script's file name
        given = "wrap" if name == "--wrap" else PurePosixPath(name).name
        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}", given):
            batch.job = {"name": given, **batch.job}
    _chdir(batch, cwd)
    return batch


def _chdir(batch: BatchJob, cwd: str) -> None:
    """``--chdir``/``-D`` as sbatch reads it: a relative directory is from ``cwd``, and
    ``cwd`` is the default's (the submit directory, mounted where the node allows), so
    ``-D .`` changes nothing."""
    workdir = batch.job.get("workdir")
    if batch.origins.get("workdir") != "--chdir" or not isinstance(workdir, str):
        return
    path = os.path.normpath(os.path.join(cwd, workdir))
    if path == os.path.normpath(cwd):
        del batch.job["workdir"]
    else:
        batch.job["workdir"] = path


def absolute_outputs(data: Any, batch: BatchJob | None, cwd: str) -> Any:
    """The job file with relative ``output``/``error`` patterns made absolute from the
    script's ``--chdir`` (as SLURM writes them in the job's working directory), else from
    ``cwd``."""
    if not isinstance(data, dict):
        return data
    chdir = batch is not None and batch.origins.get("workdir") == "--chdir"
    base = data.get("workdir") if chdir else None
    out = dict(data)
    for key in ("output", "error"):
        if isinstance(out.get(key), str) and out[key] and not out[key].startswith("/"):
            out[key] = os.path.join(base if isinstance(base, str) and base else cwd, out[key])
    return out


def _line_number(message: str) -> float:
    """``line 12: ...`` -> 12; the command line's come after the script's."""
    where = message.split(":", 1)[0]
    return int(where[5:]) if where.startswith("line ") else float("inf")


def wrap_script(command: str) -> str:
    """``gsub --wrap CMD``: the script sbatch makes of it."""
    return f"#!/bin/sh\n{command}\n"


def _rota_directive(req: Request, words: list[str]) -> None:
    for word in words:
        key, eq, raw = word.partition("=")
        if not eq or key not in ROTA_KEYS:
            raise ScriptError(
                f"unknown #ROTA directive {key!r}; use KEY=VALUE with KEY one of "
                f"{', '.join(ROTA_KEYS)}"
            )
        target = ROTA_KEYS[key]
        req.origins[target] = f"#ROTA {key}"  # wins over pyxis' --container-image
        if key == "mount":
            req.job.setdefault("mounts", []).append(raw)
        elif key == "env":
            name, has_value, val = raw.partition("=")
            if not has_value:
                raise ScriptError(f"#ROTA env: expected env=NAME=VALUE, got {raw!r}")
            req.job.setdefault("env", {})[name] = val
        elif target.startswith("resources."):
            req.resources[target.split(".", 1)[1]] = _rota_value(raw)
        else:
            req.job[target] = _rota_value(raw)


def dump_job(job: Mapping[str, Any]) -> str:
    """The job file as YAML: keys in the order given, multi-line strings as ``|`` blocks."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump(dict(job), Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)
