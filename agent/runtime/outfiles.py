"""The job's ``--output``/``--error`` files, written by the agent of its first node.

Paths come from the job's patterns (``rota.jobends.expand``) and must pass this node's own
``allowed_mounts`` with symbolic links resolved, like a bind mount. The directory must exist
(as with sbatch); the files are created for the container's uid:gid and receive the output as it
comes, then the complete output once the container ended.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rota.jobends import expand
from rota.messages import LaunchOrder
from rota.validate import SpecError, resolve_mount_source

LABEL_OUTPUT = "rota.output"  # container labels: where the files go, kept for an adopting agent
LABEL_ERROR = "rota.error"


@dataclass(frozen=True, slots=True)
class OutputFiles:
    """Where the job's standard output and error go ("" = not to a file of its own)."""

    output: str = ""
    error: str = ""

    def labels(self) -> dict[str, str]:
        return {k: v for k, v in ((LABEL_OUTPUT, self.output), (LABEL_ERROR, self.error)) if v}

    @classmethod
    def from_labels(cls, labels: dict[str, str]) -> OutputFiles:
        return cls(labels.get(LABEL_OUTPUT, ""), labels.get(LABEL_ERROR, ""))

    def streams(self) -> list[tuple[str, bool, bool]]:
        """(path, stdout, stderr) per file: stderr goes with stdout unless ``error`` is set."""
        out = []
        if self.output:
            out.append((self.output, True, not self.error))
        if self.error:
            out.append((self.error, not self.output, True))
        return out


def plan(order: LaunchOrder, node: str, allowed: Iterable[str]) -> OutputFiles:
    """The files of this launch (none on a gang's other ranks), created empty and owned by
    ``order``'s container user; SpecError naming the field when one cannot be written."""
    if order.env.get("NODE_RANK", "0") != "0":
        return OutputFiles()
    env = order.env
    array = env.get("ROTA_ARRAY_JOB_ID", "")
    fields = {
        "j": order.display_id,
        "A": array or order.display_id,
        "a": env.get("ROTA_ARRAY_TASK_ID", ""),
        "x": env.get("ROTA_JOB_NAME", ""),
        "u": order.user,
        "N": node,
    }
    allowed = tuple(allowed)
    paths = {}
    for name, pattern in (("output", order.spec.output), ("error", order.spec.error)):
        if not pattern:
            continue
        path = Path(expand(pattern, fields))
        folder = resolve_mount_source(name, str(path.parent), allowed)
        paths[name] = str(Path(folder) / path.name)
    return OutputFiles(paths.get("output", ""), paths.get("error", ""))


def create(files: OutputFiles, uid: int, gid: int) -> None:
    """Create (truncate) each file for ``uid:gid``; SpecError naming the one that fails."""
    for name, path in (("output", files.output), ("error", files.error)):
        if not path:
            continue
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            try:
                if os.geteuid() == 0:
                    os.fchown(fd, uid, gid)
            finally:
                os.close(fd)
        except OSError as exc:
            raise SpecError(name, f"cannot write {path} on the node: {exc.strerror}") from None


def write(path: str, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` over the file from its start (in place, so ``tail -f`` keeps it)."""
    with open(path, "r+b" if os.path.exists(path) else "wb") as out:
        out.truncate(0)
        for chunk in chunks:
            out.write(chunk)
            out.flush()
