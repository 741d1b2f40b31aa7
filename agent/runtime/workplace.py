"""Where a job works on its node, decided and prepared before its container is created.

As on a cluster with a shared file system, a job runs in the directory it was submitted from:
when the spec names no ``workdir`` and its ``submit_dir`` lies under the node's
``allowed_mounts``, that directory is bind-mounted read-write at its own path (symbolic links
resolved) and is the container's working directory. The home directory of the job's passwd
entry on the node is mounted the same way and set as ``HOME`` when it is allowed (unless the
job's ``env`` sets ``HOME``). Both go through exactly the checks and staging of a user's own
mount (``policy.admit``'s rules, ``MountStager``: opened as the job's user, so a directory
that user cannot reach is never mounted); one that cannot be mounted is left out with a note
for the job's events, and the job runs as before (in the image's working directory, ``HOME``
as the image has it). Output without ``-o`` goes to ``outfiles.default_output`` when the node
may write there, else only to the agent's log (``glogs``), also with a note.
"""

from __future__ import annotations

from dataclasses import dataclass

from rota.agent.runtime import outfiles
from rota.agent.runtime.mounts import MountStager
from rota.agent.runtime.outfiles import OutputFiles
from rota.agent.runtime.policy import ContainerPolicy, Identity
from rota.allowlists import resolve_mount_source
from rota.inputs import SpecError
from rota.jobspec import Mount
from rota.messages import LaunchOrder

SETTING = "the node's allowed_mounts, rota agent --allowed-mount"


@dataclass(frozen=True, slots=True)
class Workplace:
    """A launch's staged mounts, output files, user, working directory ("" = the image's),
    ``HOME`` ("" = the image's) and the notes for the job's events."""

    mounts: tuple[Mount, ...]
    files: OutputFiles
    who: Identity
    workdir: str = ""
    home: str = ""
    notes: tuple[str, ...] = ()


def prepare(
    order: LaunchOrder, node: str, policy: ContainerPolicy, stager: MountStager, key: str
) -> Workplace:
    """Admit ``order`` (``policy.admit``), create its output files as its user and stage its
    mounts under ``key`` with the submit directory and home that may be added; SpecError for
    what fails the job (a refused or unstageable mount or ``-o``/``-e`` file of its own)."""
    mounts = policy.admit(order)
    who = policy.identity(order)
    allowed = policy.allowed_mounts
    notes: list[str] = []
    append = order.spec.open_mode == "append"
    files = outfiles.create(outfiles.plan(order, node, allowed), who.uid, who.gid, append)
    files = _default_output(order, node, allowed, files, who, notes)
    targets = {m.target.rstrip("/") or "/" for m in mounts}
    wanted: dict[str, str] = {}  # path -> what it is, for the notes
    workdir = order.spec.workdir
    if not workdir and order.spec.submit_dir:
        workdir = _allowed("submit directory", order.spec.submit_dir, allowed, notes)
        if workdir:
            wanted[workdir] = "submit directory"
    home = _allowed("home directory", who.home, allowed, notes) if who.home else ""
    if home and "HOME" not in order.container_env:
        wanted.setdefault(home, "home directory")
    else:
        home = ""
    extras = [Mount(path, path) for path in wanted if path not in targets]
    staged, left_out = _stage(stager, key, mounts, extras, wanted, who, notes)
    if workdir in left_out and not order.spec.workdir:
        workdir = ""
    if home in left_out:
        home = ""
    return Workplace(staged, files, who, workdir, home, tuple(notes))


def _allowed(what: str, path: str, allowed: tuple[str, ...], notes: list[str]) -> str:
    """``path`` with links resolved when the node may mount it; "" and a note when not."""
    try:
        return resolve_mount_source(what, path, allowed)
    except SpecError as exc:
        notes.append(f"{what} {path} not mounted: {_reason(exc)} ({SETTING})")
        return ""


def _default_output(
    order: LaunchOrder,
    node: str,
    allowed: tuple[str, ...],
    files: OutputFiles,
    who: Identity,
    notes: list[str],
) -> OutputFiles:
    try:
        path = outfiles.default_output(order, node, allowed)
        if not path:
            return files
        append = order.spec.open_mode == "append"
        made = outfiles.create(OutputFiles(path), who.uid, who.gid, append)
    except SpecError as exc:
        notes.append(f"no default output file, the output is in glogs only: {_reason(exc)}")
        return files
    return OutputFiles(path, files.error, made.output_from, files.error_from)


def _stage(
    stager: MountStager,
    key: str,
    mounts: tuple[Mount, ...],
    extras: list[Mount],
    names: dict[str, str],
    who: Identity,
    notes: list[str],
) -> tuple[tuple[Mount, ...], set[str]]:
    """Stage ``mounts`` and what of ``extras`` can be; (staged, sources left out). A user's
    own mount that fails raises; an extra that fails is left out with a note."""
    left_out: set[str] = set()
    while True:
        try:
            staged = stager.stage(key, [*mounts, *extras], who.uid, who.gid)
            return staged, left_out
        except SpecError as exc:
            index = _mount_index(exc.field)
            if index is None or index < len(mounts):
                raise
            dropped = extras.pop(index - len(mounts))
            left_out.add(dropped.source)
            what = names.get(dropped.source, "directory")
            notes.append(f"{what} {dropped.source} not mounted: {_reason(exc)}")


def _mount_index(field: str) -> int | None:
    """``i`` of ``mounts[i].source``, the stager's field names."""
    head, _, rest = field.partition("[")
    number = rest.partition("]")[0]
    return int(number) if head == "mounts" and number.isdigit() else None


def _reason(exc: SpecError) -> str:
    return str(exc).partition(": ")[2] or str(exc)
