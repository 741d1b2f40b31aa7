"""The job's ``--output``/``--error`` files, written by the agent of its first node.

Paths come from the job's patterns (``rota.jobends.expand``) and must pass this node's own
``allowed_mounts`` with symbolic links resolved, like a bind mount. The directory must exist
(as with sbatch); the files are opened as the container's uid:gid, never as root
(``useropen.open_as``: no symbolic link followed, only a regular file of that user, never
blocking), and receive the output as it comes, then the complete output once the container
ended. The job's ``open_mode`` (the scheduler fills in its default) says where an attempt's
output starts: ``truncate`` empties the file when the attempt starts, ``append`` keeps what the
file held then (an earlier attempt's output, SLURM's ``--open-mode=append``) and writes after
it; either way, what this attempt wrote is written again from that offset. Every file of an attempt's output (these and the agent's own log) holds at most the
agent's ``max_output`` bytes, then one marker line (``CappedWriter``).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rota.agent.runtime.useropen import open_as
from rota.allowlists import resolve_mount_source
from rota.inputs import SpecError
from rota.jobends import expand
from rota.messages import LaunchOrder

LABEL_OUTPUT = "rota.output"  # container labels: where the files go, kept for an adopting agent
LABEL_ERROR = "rota.error"
LABEL_OUTPUT_FROM = "rota.output.from"  # the offset where this attempt's output starts
LABEL_ERROR_FROM = "rota.error.from"


@dataclass(frozen=True, slots=True)
class OutputFiles:
    """Where the job's standard output and error go ("" = not to a file of its own), and the
    offset in each where this attempt's output starts (what came before is kept)."""

    output: str = ""
    error: str = ""
    output_from: int = 0
    error_from: int = 0

    def labels(self) -> dict[str, str]:
        pairs = (
            (LABEL_OUTPUT, self.output),
            (LABEL_ERROR, self.error),
            (LABEL_OUTPUT_FROM, str(self.output_from) if self.output_from else ""),
            (LABEL_ERROR_FROM, str(self.error_from) if self.error_from else ""),
        )
        return {k: v for k, v in pairs if v}

    @classmethod
    def from_labels(cls, labels: dict[str, str]) -> OutputFiles:
        return cls(
            labels.get(LABEL_OUTPUT, ""),
            labels.get(LABEL_ERROR, ""),
            _offset(labels.get(LABEL_OUTPUT_FROM, "")),
            _offset(labels.get(LABEL_ERROR_FROM, "")),
        )

    def streams(self) -> list[tuple[str, bool, bool, int]]:
        """(path, stdout, stderr, offset) per file: stderr goes with stdout unless ``error``
        is set; the attempt's output goes from ``offset`` on."""
        out = []
        if self.output:
            out.append((self.output, True, not self.error, self.output_from))
        if self.error:
            out.append((self.error, not self.output, True, self.error_from))
        return out


def _offset(text: str) -> int:
    return int(text) if text.isdigit() else 0


def plan(order: LaunchOrder, node: str, allowed: Iterable[str]) -> OutputFiles:
    """The files of this launch (none on a gang's other ranks), created empty and owned by
    ``order``'s container user; SpecError naming the field when one cannot be written."""
    if order.env.get("NODE_RANK", "0") != "0":
        return OutputFiles()
    fields = _fields(order, node)
    paths = {}
    for name, pattern in (("output", order.spec.output), ("error", order.spec.error)):
        if pattern:
            paths[name] = _resolve(name, expand(pattern, fields), tuple(allowed))
    return OutputFiles(paths.get("output", ""), paths.get("error", ""))


def default_output(order: LaunchOrder, node: str, allowed: Iterable[str]) -> str:
    """Where the standard output of a job that names no ``output`` goes: ``slurm-%j.out``
    (``slurm-%A_%a.out`` for an array task) for a batch script, ``rota-%j.out`` for a job file,
    in its submit directory; "" without a submit directory or on a gang's other ranks;
    SpecError when the node's ``allowed_mounts`` refuse that directory."""
    spec = order.spec
    if spec.output or not spec.submit_dir or order.env.get("NODE_RANK", "0") != "0":
        return ""
    if not spec.slurm_env:
        name = "rota-%j.out"
    elif order.env.get("ROTA_ARRAY_JOB_ID"):
        name = "slurm-%A_%a.out"
    else:
        name = "slurm-%j.out"
    pattern = str(Path(spec.submit_dir) / name)
    return _resolve("output", expand(pattern, _fields(order, node)), tuple(allowed))


def _fields(order: LaunchOrder, node: str) -> dict[str, str]:
    env = order.env
    return {
        "j": order.display_id,
        "J": order.display_id,  # SLURM's jobid.stepid: the batch script's is the job id
        "A": env.get("ROTA_ARRAY_JOB_ID", "") or order.display_id,
        "a": env.get("ROTA_ARRAY_TASK_ID", ""),
        "x": env.get("ROTA_JOB_NAME", ""),
        "u": order.user,
        "N": node,
        "n": "0",  # the node's rank in the job: files are written on the first node
        "s": "batch",  # the batch script's step
        "t": "0",
    }


def _resolve(name: str, expanded: str, allowed: tuple[str, ...]) -> str:
    path = Path(expanded)
    folder = resolve_mount_source(name, str(path.parent), allowed)
    return str(Path(folder) / path.name)


def create(files: OutputFiles, uid: int, gid: int, append: bool = False) -> OutputFiles:
    """Create each file as ``uid:gid``, truncated, or with ``append`` kept as it is: ``files``
    with the offsets where this attempt's output starts; SpecError naming the one that fails."""
    starts = {}
    for name, path in (("output", files.output), ("error", files.error)):
        if not path:
            continue
        try:
            fd = open_as(path, uid, gid, None if append else 0)
        except OSError as exc:
            raise SpecError(name, f"cannot write {path} on the node: {exc.strerror}") from None
        try:
            starts[name] = os.fstat(fd).st_size
        finally:
            os.close(fd)
    return OutputFiles(files.output, files.error, starts.get("output", 0), starts.get("error", 0))


def owner(user: str) -> tuple[int, int]:
    """(uid, gid) of a container's ``Config.User`` (``uid:gid``, as the agent creates it)."""
    uid, _, gid = user.partition(":")
    if not (uid.isdigit() and gid.isdigit()):
        raise OSError(errno.EINVAL, f"the container's user {user!r} is not uid:gid")
    return int(uid), int(gid)


def write(
    path: str, uid: int, gid: int, chunks: Iterable[bytes], limit: int, start: int = 0
) -> bool:
    """Write ``chunks`` over the file from offset ``start`` (what comes before is kept),
    opened as ``uid:gid`` (in place, so ``tail -f`` keeps it), at most ``limit`` bytes; True
    when the output was cut there."""
    with os.fdopen(open_as(path, uid, gid, start), "wb") as out:
        capped = CappedWriter(out, limit)
        for chunk in chunks:
            if not capped.write(chunk):
                break
    return capped.truncated


class CappedWriter:
    """Writes to ``out`` (flushed per chunk) up to ``limit`` bytes; the rest is dropped and
    the line ``[rota: output truncated at SIZE]`` written once instead."""

    def __init__(self, out: BinaryIO, limit: int) -> None:
        self._out = out
        self._left = limit
        self._line_ended = True  # the marker starts a line of its own
        self.limit = limit
        self.truncated = False

    def write(self, chunk: bytes) -> bool:
        """Write what fits of ``chunk``; False once the limit is reached (stop reading)."""
        if self.truncated:
            return False
        head = chunk[: self._left]
        if head:
            self._out.write(head)
            self._left -= len(head)
            self._line_ended = head.endswith(b"\n")
        if len(chunk) > len(head):
            note = truncation_note(self.limit).encode() + b"\n"
            self._out.write(note if self._line_ended else b"\n" + note)
            self.truncated = True
        self._out.flush()
        return not self.truncated


def truncation_note(limit: int) -> str:
    """``[rota: output truncated at 1.0 GiB]`` for ``limit`` bytes."""
    size = float(limit)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            break
        size /= 1024
    shown = f"{limit} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
    return f"[rota: output truncated at {shown}]"
