"""Which rota job owns a GPU process: maps host pids (as NVML lists them) to job display ids.

A pid belongs to a job when it runs in one of the agent's job containers: its
``/proc/<pid>/cgroup`` names the container id (cgroup v1 and v2, ``/docker/<id>`` or
``docker-<id>.scope``), or, where cgroups do not show it, one of its ancestors is the container's
init process. Other pids are foreign (``""``). Container init pids and display ids are looked up
once per container; a pid's verdict is kept while the set of job containers stays the same (a
reused pid can only turn into a job's process inside a new container, which clears it), so a
steady heartbeat reads nothing from /proc.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

_CONTAINER_ID = re.compile(r"[0-9a-f]{64}")
_MAX_DEPTH = 64  # parent links followed before giving up

# (init pid, display id) of a container, or None when it is gone
ContainerInfo = Callable[[str], tuple[int, str] | None]


class ProcessOwners:
    """Maps pids to the display id of the rota job whose container runs them. Thread-safe."""

    def __init__(self, container_info: ContainerInfo, proc: Path = Path("/proc")) -> None:
        self._info = container_info
        self._proc = proc
        self._cache: dict[str, tuple[int, str] | None] = {}
        self._verdicts: dict[int, str] = {}  # pid -> display id, "" for foreign
        self._containers: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def owners(self, pids: Iterable[int], container_ids: Iterable[str]) -> dict[int, str]:
        """``pid -> display id`` for every pid that runs in one of ``container_ids``."""
        with self._lock:
            return self._owners(set(pids), {c for c in container_ids if c})

    def _owners(self, pids: set[int], live: set[str]) -> dict[int, str]:
        for gone in set(self._cache) - live:
            del self._cache[gone]
        if live != self._containers:
            self._containers = frozenset(live)
            self._verdicts.clear()
        self._verdicts = {pid: v for pid, v in self._verdicts.items() if pid in pids}
        if not pids:
            return {}
        todo = pids - set(self._verdicts)
        if todo:
            self._verdicts.update(self._judge(todo, live))
        return {pid: v for pid, v in self._verdicts.items() if v}

    def _judge(self, pids: set[int], live: set[str]) -> dict[int, str]:
        """Read /proc for pids not judged yet; a pid whose container is not running yet is
        left unjudged (asked again next time)."""
        known: dict[str, str] = {}
        by_init: dict[int, str] = {}
        for cid in live:
            info = self._cache.get(cid) or self._info(cid)
            if info is not None and info[0] > 0:
                self._cache[cid] = info  # a container not started yet has no pid: ask again
            if info is not None:
                known[cid] = info[1]
                if info[0] > 0:
                    by_init[info[0]] = info[1]
        complete = all(cid in self._cache for cid in live)  # every container has its pid
        out: dict[int, str] = {}
        chain: dict[int, str] = dict(by_init)  # pid -> owner, shared by the walks below
        for pid in pids:
            owner = self._by_cgroup(pid, known) or self._by_ancestry(pid, chain)
            if owner or complete:
                out[pid] = owner
        return out

    def _by_cgroup(self, pid: int, known: dict[str, str]) -> str:
        try:
            text = (self._proc / str(pid) / "cgroup").read_text()
        except OSError:
            return ""
        for cid in _CONTAINER_ID.findall(text):
            if cid in known:
                return known[cid]
        return ""

    def _by_ancestry(self, pid: int, chain: dict[int, str]) -> str:
        """The owner of the nearest ancestor that is a container's init; every pid walked is
        remembered in ``chain`` (siblings share their parents' walk)."""
        seen: list[int] = []
        owner = ""
        for _ in range(_MAX_DEPTH):
            if pid in chain:
                owner = chain[pid]
                break
            if pid <= 1:
                break
            seen.append(pid)
            pid = self._parent(pid)
        chain.update(dict.fromkeys(seen, owner))
        return owner

    def _parent(self, pid: int) -> int:
        try:
            stat = (self._proc / str(pid) / "stat").read_text()
        except OSError:
            return 0
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        fields = stat.rsplit(")", 1)[-1].split()
        return int(fields[1]) if len(fields) > 1 else 0
