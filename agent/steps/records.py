"""The step tasks running in an attempt's container, recorded so that an agent that restarts
finds those an earlier agent process started, and stops them (as SLURM's tasks die with the
slurmstepd that ran them: their output and end had nowhere to go any more).

One empty file per running ``docker exec``, named by its exec id, under the agent's own
directory (never mounted into a container, so a job cannot name a process for the agent to
stop); the engine says whether that exec still runs, in which container, and its process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import time
from pathlib import Path

import docker
from docker.errors import DockerException

log = logging.getLogger("rota.agent")
KILL_WAIT = 5.0  # seconds between SIGTERM and SIGKILL for tasks left running
_EXEC_ID = re.compile(r"^[0-9a-f]{64}$")


class TaskRecords:
    """The recorded execs of one attempt (``root``: its own folder). Thread-safe."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def add(self, exec_id: str, what: str) -> None:
        """Record a started exec (``what`` says which task, for whoever reads the folder)."""
        if not _EXEC_ID.match(exec_id):
            return
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        (self.root / exec_id).write_text(what + "\n")

    def remove(self, exec_id: str) -> None:
        with contextlib.suppress(OSError):
            (self.root / exec_id).unlink()

    def found(self) -> list[tuple[str, str]]:
        """The recorded execs: (exec id, which task)."""
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return []
        out = []
        for entry in entries:
            if _EXEC_ID.match(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    out.append((entry.name, Path(entry.path).read_text()[:200].strip()))
        return out

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def stop_left(
    records: TaskRecords, left: list[tuple[str, str]], api: docker.APIClient, container_id: str
) -> list[str]:
    """Stop the execs ``left`` (``records.found()`` when the container was adopted, before
    this agent ran any task there) that still run in ``container_id``: SIGTERM to each and
    every process under it, SIGKILL to those left after ``KILL_WAIT``. Forgets their records
    and says which tasks were stopped (blocking)."""
    pids: list[int] = []
    stopped = []
    for exec_id, what in left:
        records.remove(exec_id)
        try:
            info = api.exec_inspect(exec_id)
        except DockerException:
            continue  # gone with an earlier container
        if info.get("Running") and info.get("ContainerID") == container_id and info.get("Pid"):
            pids.append(int(info["Pid"]))
            stopped.append(what)
    if not pids:
        return stopped
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [p for p in with_descendants(pids) if _alive(p)]
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + KILL_WAIT
        while sig == signal.SIGTERM and any(_alive(p) for p in alive):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
    return stopped


def with_descendants(pids: list[int]) -> list[int]:
    """``pids`` and every process under them (from the host's /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                text = stat.read()
        except OSError:
            continue
        parent = int(text[text.rindex(b")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = list(pids)
    while todo and len(found) < 100_000:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return False
    return text[text.rindex(b")") + 2 : text.rindex(b")") + 3] != b"Z"
