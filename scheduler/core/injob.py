"""``sbatch`` and ``scancel`` inside a job: what a container sent through its node's agent,
read as gsub reads a command line, and how often a job may ask.

Every byte here came from a container: the sizes are checked first (``check_command``), the
command line is split as gsub splits its own and must agree with where the container's sbatch
found its script, and the script is read by ``rota.sbatch`` exactly as gsub reads it, with
the running job's image as the default image. Paths the container names (its working
directory, ``-D``, ``-o``, ``-e``) are mapped to the node's through the job's mounts
(``HostPaths``); a bare ``--export=NAME`` takes the value the container's sbatch sent from the
environment it ran in. Nothing here decides who may ask (``authz.may_command_from_job``) or
stores anything.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rota.inputs import MAX_COMMAND_BYTES, MAX_ENV_VALUE, MAX_PATH, SpecError, check_text
from rota.jobspec import JobSpec, parse_job_file
from rota.messages import JobCommand
from rota.sbatch import absolute_outputs, is_batch_script, read_script, wrap_script
from rota.sbatch_options import ScriptError, long_name, takes_value
from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.core.errors import UserError
from rota.states import JobState
from rota.validate import MAX_COMMAND_ARGS, MAX_ENV, MAX_ENV_KEY

# sbatch-wait: sbatch --wait asking whether the job it submitted ended
TOOLS = ("sbatch", "scancel", "sbatch-wait")
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def check_command(cmd: JobCommand) -> None:
    """UserError unless ``cmd`` is within what a command line may be: a known tool, at most
    ``MAX_COMMAND_ARGS`` arguments and ``MAX_COMMAND_BYTES`` characters of them, a script of
    at most ``MAX_COMMAND_BYTES`` bytes (gsub's limit of a job's command), an absolute working
    directory of at most ``MAX_PATH`` characters, and an environment (``check_environment``)."""
    if cmd.tool not in TOOLS:
        raise UserError(f"tool: {cmd.tool[:40]!r} is not one of {', '.join(TOOLS)}")
    if len(cmd.argv) > MAX_COMMAND_ARGS:
        raise UserError(f"at most {MAX_COMMAND_ARGS} arguments are allowed")
    if sum(len(arg) for arg in cmd.argv) > MAX_COMMAND_BYTES:
        raise UserError(f"at most {MAX_COMMAND_BYTES} characters of arguments are allowed")
    if len(cmd.script) > MAX_COMMAND_BYTES:
        raise UserError(
            f"the script is {len(cmd.script)} bytes; at most {MAX_COMMAND_BYTES} are allowed"
        )
    if len(cmd.cwd) > MAX_PATH or not cmd.cwd.startswith("/"):
        raise UserError(f"the working directory must be an absolute path of at most {MAX_PATH}")
    if not -1 <= cmd.script_index < max(len(cmd.argv), 1):
        raise UserError("the script's argument is out of range")
    check_environment(cmd.environment)


def check_environment(environment: Sequence[tuple[str, str]]) -> None:
    """UserError naming the field unless ``environment`` is at most ``MAX_ENV`` variables,
    each named as a shell names one (at most ``MAX_ENV_KEY`` characters), with a value of at
    most ``MAX_ENV_VALUE`` characters without control characters but tabs and newlines, and
    ``MAX_COMMAND_BYTES`` characters in all."""
    if len(environment) > MAX_ENV:
        raise UserError(f"environment: {len(environment)} variables; at most {MAX_ENV}")
    total = 0
    for name, value in environment:
        if len(name) > MAX_ENV_KEY or not _VARIABLE.match(name):
            raise UserError(
                f"environment: {name[:40]!r} is not a variable name (letters, digits and _, "
                f"not starting with a digit, at most {MAX_ENV_KEY})"
            )
        try:
            check_text(f"environment.{name}", value, MAX_ENV_VALUE, multiline=True)
        except SpecError as exc:
            raise UserError(str(exc)) from None
        total += len(name) + len(value)
    if total > MAX_COMMAND_BYTES:
        raise UserError(f"environment: {total} characters; at most {MAX_COMMAND_BYTES} are allowed")


@dataclass(frozen=True, slots=True)
class SbatchLine:
    """An sbatch command line: sbatch options for the script, the script's name ("" for
    standard input), its arguments, ``--wrap``'s command, ``--parsable`` and ``--wait``."""

    options: tuple[str, ...]
    script: str
    args: tuple[str, ...]
    wrap: str | None
    parsable: bool
    wait: bool = False


def split_line(argv: Sequence[str], script_index: int) -> SbatchLine:
    """Options up to the first word that is not one (or after ``--``), as gsub splits its
    command line; UserError when that word is not the one the container's sbatch read its
    script from (``script_index``), or with both ``--wrap`` and a script."""
    options: list[str] = []
    wrap: str | None = None
    parsable = wait = False
    found = -1
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--":
            found = i if i < len(argv) else -1
            break
        if not word.startswith("-") or word == "-":
            found = i - 1
            break
        name = long_name(word)
        attached = "=" in word if word.startswith("--") else len(word) > 2
        words = [word]
        if name is not None and takes_value(name) and not attached and i < len(argv):
            words.append(argv[i])
            i += 1
        if name == "parsable":
            parsable = True
        elif name == "wait":
            wait = True
        elif name == "wrap":
            wrap = words[1] if len(words) > 1 else word.partition("=")[2]
        else:
            options += words
    if found != script_index:
        raise UserError(
            "could not tell which argument is the script: write the options before it in "
            "full (--job-name=NAME)"
        )
    if wrap is not None and found >= 0:
        raise UserError("--wrap CMD takes no script")
    script = argv[found] if found >= 0 else ""
    args = tuple(argv[found + 1 :]) if found >= 0 else ()
    return SbatchLine(tuple(options), script, args, wrap, parsable, wait)


class HostPaths:
    """The node's path of a path in a job's container, through the job's mounts (the longest
    target first) and its submit directory (mounted at its own path)."""

    def __init__(self, spec: JobSpec) -> None:
        pairs = [(m.target, m.source) for m in spec.mounts]
        if spec.submit_dir:
            pairs.append((spec.submit_dir, spec.submit_dir))
        self._pairs = sorted(
            ((posixpath.normpath(t), posixpath.normpath(s)) for t, s in pairs),
            key=lambda pair: -len(pair[0]),
        )

    def host(self, path: str) -> str | None:
        """``path`` (absolute, in the container) on the node; None when no mount holds it."""
        path = posixpath.normpath(path)
        for target, source in self._pairs:
            if path == target:
                return source
            if path.startswith(target.rstrip("/") + "/"):
                return posixpath.join(source, path[len(target) :].lstrip("/"))
        return None

    def required(self, path: str, what: str) -> str:
        """``host(path)``; UserError naming ``what`` when no mount of the job holds it."""
        found = self.host(path)
        if found is None:
            raise UserError(
                f"{what}: {path} is not in a directory mounted from the node into this job "
                "(a mount's target or the submit directory); inside a job, sbatch takes "
                "paths under those only"
            )
        return found


@dataclass(frozen=True, slots=True)
class Sbatch:
    """A script read for submission: the spec, gsub's warnings, ``--parsable`` and
    ``--wait``."""

    spec: JobSpec
    source: str
    warnings: tuple[str, ...]
    parsable: bool
    wait: bool = False


def read_sbatch(cmd: JobCommand, running: JobSpec, node: str, now: datetime) -> Sbatch:
    """The job ``cmd`` (checked: ``check_command``) asks for, from a container of a job with
    spec ``running`` on ``node``: its script read as gsub reads it in the container's working
    directory with the environment sbatch sent (for ``sbatch $0``, which the container sent
    no text of, over the running job's own ``env``), the running job's image unless the
    script names one, and the paths mapped to the node's. UserError naming what is wrong (the
    script's lines, one per problem)."""
    line = split_line(cmd.argv, cmd.script_index)
    cwd = posixpath.normpath(cmd.cwd)
    name = "--wrap" if line.wrap is not None else line.script or "-"
    own = own_script(running)
    environ = dict(cmd.environment)
    if line.wrap is not None:
        text = wrap_script(line.wrap)
    elif own is not None and line.script == own[0]:
        text = own[1]
        environ = {**running.env, **environ}
    else:
        try:
            text = cmd.script.decode("utf-8")
        except UnicodeDecodeError:
            raise UserError(f"{name}: the script is not UTF-8 text") from None
        if not text.strip():
            raise UserError(f"Unable to open file {name}: not there, empty, or a program")
        if not is_batch_script(name, text):
            raise UserError(
                f"{name}: not a batch script (start it with #! or #SBATCH lines); inside a "
                "job sbatch takes scripts only"
            )
    try:
        batch = read_script(
            name, text, running.image, environ, cwd, options=line.options, args=line.args, now=now
        )
    except ScriptError as exc:
        raise UserError("\n".join(f"{name}: {row}" for row in str(exc).splitlines())) from None
    paths = HostPaths(running)
    data: dict[str, Any] = absolute_outputs(batch.job, batch, cwd)
    if batch.origins.get("workdir") == "--chdir" and isinstance(data.get("workdir"), str):
        data["workdir"] = paths.required(data["workdir"], "--chdir")
    for key in ("output", "error"):
        if isinstance(data.get(key), str) and data[key]:
            data[key] = paths.required(data[key], f"--{key}")
    try:
        spec = parse_job_file(data)
    except SpecError as exc:
        directive = batch.directive_for(exc.field)
        raise UserError(f"{name}: {exc}" + (f" (from {directive})" if directive else "")) from None
    warnings = list(batch.warnings)
    submit_dir = paths.host(cwd)
    if submit_dir is None:
        warnings.append(
            f"the working directory {cwd} is not mounted from the node: the new job starts "
            "in its image's working directory"
        )
    spec = dataclasses.replace(spec, submit_dir=submit_dir or "", submit_host=node)
    return Sbatch(spec, name, tuple(warnings), line.parsable, line.wait)


def own_script(spec: JobSpec) -> tuple[str, str] | None:
    """(``$0``, script) of a batch script's job (a command ``[interpreter..., "-c", script,
    $0?, args...]``, as ``rota.sbatch`` makes it: ``$0`` is the interpreter's last word when no
    arguments follow), so that ``sbatch $0`` resubmits the job's own script, as under SLURM
    (where ``$0`` is the node's copy of it); None for any other job."""
    command = spec.command
    if not spec.slurm_env or "-c" not in command:
        return None
    at = command.index("-c")
    if at == 0 or at + 1 >= len(command):
        return None
    return command[at + 2] if at + 2 < len(command) else command[at - 1], command[at + 1]


def waited_exit(jobs: Sequence[JobRecord]) -> int | None:
    """What sbatch --wait exits with once every one of ``jobs`` (a job, an array's tasks)
    ended: the highest exit code, a job that ended without one counting 0 when COMPLETED and
    1 otherwise (gsub --wait's rule); None while any has not ended."""
    if not jobs or not all(j.state.terminal for j in jobs):
        return None
    return max(
        j.exit_code if j.exit_code is not None else int(j.state is not JobState.COMPLETED)
        for j in jobs
    )


class CommandBudget:
    """How many commands each job may send from each node: ``burst`` at once, then
    ``per_second`` (a token bucket per (job, node), on the caller's clock). Buckets that are
    full again are forgotten once ``MAX_BUCKETS`` are followed, so ended jobs hold nothing."""

    MAX_BUCKETS = 10_000

    def __init__(self, burst: int, per_second: float) -> None:
        self.burst = burst
        self.per_second = per_second
        self._buckets: dict[tuple[int, str], tuple[float, float]] = {}  # -> (tokens, at)

    def take(self, job_id: int, node: str, now: float) -> bool:
        """Spend one command of ``job_id`` on ``node``; False (nothing spent) when none is left."""
        key = (job_id, node)
        tokens = self._level(key, now)
        if tokens < 1:
            return False
        if key not in self._buckets and len(self._buckets) >= self.MAX_BUCKETS:
            self._forget_full(now)
        self._buckets[key] = (tokens - 1, now)
        return True

    def describe(self) -> str:
        return f"{self.burst} at once, then {self.per_second:g} a second"

    def _level(self, key: tuple[int, str], now: float) -> float:
        tokens, at = self._buckets.get(key, (float(self.burst), now))
        return min(float(self.burst), tokens + max(now - at, 0.0) * self.per_second)

    def _forget_full(self, now: float) -> None:
        for key in [k for k in self._buckets if self._level(k, now) >= self.burst]:
            del self._buckets[key]
