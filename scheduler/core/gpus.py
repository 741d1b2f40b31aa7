"""GPU health, occupancy and idle jobs (rules in ``cluster.gpus`` and docs/gpus.md).

Unhealthy marks are persisted (``NodeRepository.save_gpu_marks``) and job warnings committed
before either replaces what memory holds (a failed write raises and changes neither);
everything else here is derived from telemetry and kept in memory. The snapshot builder reads
``blocked``; the engine calls ``node_joined`` after a hello, ``observe`` after a heartbeat and
``idle_jobs`` on every tick.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection

from rota.scheduler.cluster.gpus import (
    AUTO,
    GpuDisplay,
    GpuMark,
    GpuTrack,
    display,
    human_duration,
)
from rota.scheduler.cluster.model import HistoryKind, JobEvent, JobRecord, NodeState
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.errors import NotFound, UserError
from rota.scheduler.core.lifecycle import Lifecycle, Orders
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.notifications import IdleNotice, idle_event
from rota.scheduler.store.protocols import JobRepository, NodeRepository
from rota.states import JobState

log = logging.getLogger("rota.scheduler")


class GpuHealth:
    """Marks GPUs unhealthy, dirty or busy from heartbeats; warns about (or cancels) jobs
    whose GPUs stay idle; drains and resumes single GPUs."""

    def __init__(
        self,
        model: ClusterModel,
        store: NodeRepository,
        jobs: JobRepository,
        lifecycle: Lifecycle,
        config: SchedulerConfig,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
    ) -> None:
        """``store`` keeps the marks; ``jobs`` gives the warnings of live jobs at start-up;
        ``clock`` dates them, ``monotonic`` ages telemetry."""
        self.model = model
        self.store = store
        self.lifecycle = lifecycle
        self.config = config
        self.clock = clock
        self.monotonic = monotonic
        self.marks: dict[str, dict[int, GpuMark]] = {
            name: {m.index: m for m in marks} for name, marks in store.gpu_marks().items()
        }
        self._tracks: dict[str, dict[int, GpuTrack]] = {}
        self._blocked: dict[str, frozenset[int]] = {}  # dropped when marks or tracks change
        self._holders_index: dict[str, dict[int, JobRecord]] = {}
        self._holders_version = -1
        now = clock()
        # job id -> last time one of its GPUs was seen busy (a restart starts counting anew)
        self._active_at: dict[int, float] = {}
        self._idle_warned: dict[int, float] = {}  # job id -> the idle stretch it was warned for
        for job in model.jobs.values():
            if job.state.active:
                self._active_at[job.id] = now
                warnings = [
                    e.reason
                    for e in jobs.events(job.id)
                    if e.kind is HistoryKind.WARNING and e.attempt == job.attempt
                ]
                job.warning = warnings[-1] if warnings else ""

    # ------------------------------------------------------------ agents

    def node_joined(self, node: NodeState) -> None:
        """A (re)connected agent: forget what its old stream showed; follow marked GPUs to
        their index in the new inventory (by UUID)."""
        self._tracks[node.name] = {}
        self._blocked.pop(node.name, None)
        marks = self.marks.get(node.name)
        if not marks:
            return
        by_uuid = {g.uuid: g.index for g in node.inventory.gpus if g.uuid}
        kept: dict[int, GpuMark] = {}
        for mark in marks.values():
            index = by_uuid.get(mark.uuid) if mark.uuid else mark.index
            if index is None or index >= node.gpu_count:
                log.warning(
                    "GPU %s of node %s (marked unhealthy: %s) is no longer in its inventory",
                    mark.uuid or mark.index,
                    node.name,
                    mark.reason,
                )
                continue
            kept[index] = dataclasses.replace(mark, index=index)
        if kept != marks:
            self.store.save_gpu_marks(node.name, kept.values())
            self.marks[node.name] = kept

    def observe(self, node_name: str, session: int) -> bool:
        """Judge the fresh heartbeat of the live session ``session``: mark, auto-resume, dirty,
        busy. True when a GPU's allocatability changed."""
        node = self.model.nodes.get(node_name)
        if node is None or node.session != session:
            return False
        now, cfg = self.clock(), self.config
        telemetry = {t.index: t for t in node.telemetry}
        holders = self._holders(node.name)
        tracks = self._tracks.setdefault(node.name, {})
        marks = dict(self.marks.get(node.name) or {})  # replaces the node's once saved
        changed = marks_changed = False
        jobs: dict[int, JobRecord] = {}
        events: list[JobEvent] = []
        for gpu in node.inventory.gpus:
            t = telemetry.get(gpu.index)
            track = tracks.setdefault(gpu.index, GpuTrack())
            job = holders.get(gpu.index)
            if t is None:  # no sample of this GPU (an agent without telemetry): no judgement
                changed = track.occupancy(None, "", now, cfg) or changed
                continue
            # no reading (None) is no sign of idleness: a job is never cancelled on one
            if job is not None and (t.utilization is None or t.utilization > 0):
                self._active_at[job.id] = now
            problem = track.problem(t, now, cfg)
            mark = marks.get(gpu.index)
            if problem and mark is None:
                marks[gpu.index] = GpuMark(gpu.index, gpu.uuid, problem, now)
                marks_changed = True
                log.warning("GPU %d on %s unhealthy: %s", gpu.index, node.name, problem)
                if job is not None:
                    text = f"GPU {gpu.index} on {node.name} unhealthy: {problem}"
                    warned = jobs[job.id] = jobs.get(job.id) or self._copy(job)
                    events.append(self.lifecycle.warn(warned, text))
            elif mark is not None and track.resumable(not problem, now, cfg) and mark.by == AUTO:
                del marks[gpu.index]
                marks_changed = True
                log.info(
                    "GPU %d on %s healthy for %s: back in service",
                    gpu.index,
                    node.name,
                    human_duration(cfg.gpu_auto_resume_after),
                )
            holder = job.display_id if job is not None else ""
            if track.occupancy(t, holder, now, cfg):
                changed = True
                log.info(
                    "GPU %d on %s: %s",
                    gpu.index,
                    node.name,
                    "dirty" if track.dirty else "busy" if track.busy else "free again",
                )
        if marks_changed:
            self.store.save_gpu_marks(node.name, marks.values())
            self.marks[node.name] = marks
            changed = True
        if changed:
            self._blocked.pop(node.name, None)
            self.model.bump()
        if jobs:
            self.model.commit(list(jobs.values()), events)
        return changed

    def _holders(self, node_name: str) -> dict[int, JobRecord]:
        """GPU index -> active job on that node; the index over all nodes is rebuilt only when
        the model's version changed (every allocation change bumps it), not per heartbeat."""
        if self._holders_version != self.model.version:
            index: dict[str, dict[int, JobRecord]] = {}
            for job in self.model.jobs.values():
                if job.state.active:
                    for alloc in job.allocation:
                        index.setdefault(alloc.node, {}).update(dict.fromkeys(alloc.gpus, job))
            self._holders_index, self._holders_version = index, self.model.version
        return self._holders_index.get(node_name, {})

    def _copy(self, job: JobRecord) -> JobRecord:
        """A new record of ``job`` as the model now holds it (the holders index may be older)."""
        return dataclasses.replace(self.model.jobs.get(job.id, job))

    # ------------------------------------------------------------ planning and display

    def blocked(self, node: str) -> frozenset[int]:
        """Indices that take no jobs: marked unhealthy, dirty or busy (cached per node)."""
        found = self._blocked.get(node)
        if found is None:
            tracks = self._tracks.get(node) or {}
            found = frozenset(self.marks.get(node) or ()) | {
                i for i, t in tracks.items() if t.dirty or t.busy
            }
            self._blocked[node] = found
        return found

    def unhealthy(self, node: NodeState) -> dict[int, str]:
        """GPU index -> why it is unhealthy (marked, or reporting an NVML error) on ``node``."""
        out = {i: m.reason for i, m in (self.marks.get(node.name) or {}).items()}
        for t in node.telemetry:
            if t.error:
                out.setdefault(t.index, t.error)
        return out

    def counts(self, node: NodeState, held: Collection[int]) -> tuple[int, int]:
        """(free, unhealthy) GPUs of ``node`` as ``display`` would count them, without building
        the displays (the node summary walks every node): free is held by no job (``held``:
        indices) and allocatable; unhealthy is marked or reporting an NVML error."""
        marked = self.marks.get(node.name) or {}
        out = self.blocked(node.name)  # marked, dirty or busy
        failing = [t.index for t in node.telemetry if t.error]
        if not (held or out or failing):  # most nodes: nothing to subtract
            return node.gpu_count, 0
        unhealthy = marked.keys() | failing
        out = out | unhealthy
        free = sum(1 for g in node.inventory.gpus if g.index not in held and g.index not in out)
        return free, len(unhealthy)

    def display(self, node: NodeState, holders: dict[int, str]) -> dict[int, GpuDisplay]:
        """What ``ginfo`` shows for every GPU of ``node`` (``holders``: index -> job id)."""
        telemetry = {t.index: t for t in node.telemetry}
        marks = self.marks.get(node.name) or {}
        tracks = self._tracks.get(node.name) or {}
        return {
            g.index: display(
                telemetry.get(g.index),
                holders.get(g.index, ""),
                marks.get(g.index),
                tracks.get(g.index),
                self.config,
            )
            for g in node.inventory.gpus
        }

    # ------------------------------------------------------------ admin

    def resume(self, node_name: str, index: int, user: str) -> str:
        """Return an unhealthy GPU to service; the message says what happened."""
        node, _uuid = self._gpu_of(node_name, index)
        marks = dict(self.marks.get(node.name) or {})
        mark = marks.pop(index, None)
        if mark is None:
            return f"GPU {index} on {node.name} is not marked unhealthy; nothing to do"
        self.store.save_gpu_marks(node.name, marks.values())
        self.marks[node.name] = marks
        self._tracks.get(node.name, {}).pop(index, None)
        self._blocked.pop(node.name, None)
        self.model.bump()
        log.info("GPU %d on %s resumed by %s (was: %s)", index, node.name, user, mark.reason)
        message = f"GPU {index} on {node.name} resumed by {user} (was unhealthy: {mark.reason})"
        still = next((t.error for t in node.telemetry if t.index == index and t.error), "")
        if still and node.connected:
            message += f"; it still reports {still!r} and will be marked again"
        return message

    def drain(self, node_name: str, index: int, user: str, reason: str) -> str:
        """Take a GPU out of service by hand; only ``resume`` returns it."""
        node, uuid = self._gpu_of(node_name, index)
        why = reason or f"drained by {user}"
        marks = {
            **self.marks.get(node.name, {}),
            index: GpuMark(index, uuid, why, self.clock(), user),
        }
        self.store.save_gpu_marks(node.name, marks.values())
        self.marks[node.name] = marks
        self._blocked.pop(node.name, None)
        self.model.bump()
        held = self._holders(node.name).get(index)
        if held is not None:
            job = self._copy(held)
            self.model.commit(
                [job], [self.lifecycle.warn(job, f"GPU {index} on {node.name}: {why}")]
            )
        log.info("GPU %d on %s drained by %s: %s", index, node.name, user, why)
        return f"GPU {index} on {node.name} drained: {why}"

    def _gpu_of(self, node_name: str, index: int) -> tuple[NodeState, str]:
        node = self.model.nodes.get(node_name)
        if node is None:
            raise NotFound(f"node {node_name!r} is not registered")
        uuids = {g.index: g.uuid for g in node.inventory.gpus}
        if index not in uuids:
            raise UserError(
                f"index: node {node_name} has no GPU {index} (it reports {node.gpu_count} GPU(s))"
            )
        return node, uuids[index]

    # ------------------------------------------------------------ idle jobs

    def idle_jobs(self) -> Orders:
        """Warn about (and, with ``idle_gpu_cancel_after``, cancel or, with ``idle_gpu_action:
        requeue`` and requeues left under ``max_requeue``, requeue) jobs whose GPUs all stayed
        at 0 % utilisation; judged only on fresh telemetry of real (not simulated) GPUs. The
        warning and the stop carry the job's ``idle_warning``/``idle_end`` webhook body."""
        jobs_now = self.model.jobs
        for gone in set(self._active_at) - set(jobs_now):
            del self._active_at[gone]
            self._idle_warned.pop(gone, None)
        warn_after, cancel_after = (
            self.config.idle_gpu_warn_after,
            self.config.idle_gpu_cancel_after,
        )
        if not warn_after and not cancel_after:
            return []
        now = self.clock()
        orders: Orders = []
        jobs: list[JobRecord] = []
        events: list[JobEvent] = []
        warned: dict[int, float] = {}
        for job in list(jobs_now.values()):
            if (
                job.state is not JobState.RUNNING
                or not job.spec.gpus
                or job.spec.interactive  # grun sessions: SessionService.reclaim
                or not self._observed(job)
            ):
                continue
            since = max(job.start_time or now, self._active_at.get(job.id, 0.0))
            idle = now - since
            job = dataclasses.replace(job)  # committed, then swapped in
            requeue = (
                self.config.idle_gpu_action == "requeue" and job.attempt <= self.config.max_requeue
            )
            if cancel_after and idle >= cancel_after:
                verb = "requeued" if requeue else "cancelled"
                why = (
                    f"{verb}: its GPUs were idle (0% utilisation) for {human_duration(idle)} "
                    "(idle_gpu_cancel_after)"
                )
                final = JobState.PENDING if requeue else JobState.CANCELLED
                event, kills = self.lifecycle.stop(job, final, why)
                action = "requeue" if requeue else "cancel"
                notice = IdleNotice("idle_end", action, since, now, "idle_gpu_cancel_after", why)
                events.append(idle_event(event, job, notice))
                job.reason = why
                orders.extend(kills)
                jobs.append(job)
            elif warn_after and idle >= warn_after and self._idle_warned.get(job.id) != since:
                warned[job.id] = since
                text = f"GPUs idle (0% utilisation) for {human_duration(idle)}"
                action, at = "", None
                if cancel_after:
                    verb = "requeued" if requeue else "cancelled"
                    text += f"; {verb} at {human_duration(cancel_after)} idle"
                    action, at = ("requeue" if requeue else "cancel"), since + cancel_after
                notice = IdleNotice("idle_warning", action, since, at, "idle_gpu_warn_after", text)
                events.append(idle_event(self.lifecycle.warn(job, text), job, notice))
                jobs.append(job)
        if jobs:
            self.model.commit(jobs, events)
            self._idle_warned.update(warned)  # once committed: a failed warning is retried
            self.model.bump()
        return orders

    def last_active(self, job: JobRecord, now: float) -> float | None:
        """When ``job``'s GPUs were last seen busy (its start if never), on fresh telemetry of
        real GPUs; None when that telemetry is missing (no sign of idleness)."""
        if not self._observed(job):
            return None
        return max(job.start_time or now, self._active_at.get(job.id, 0.0))

    def _observed(self, job: JobRecord) -> bool:
        """True when every node of the job sent fresh telemetry of real GPUs (its age measured
        on the monotonic clock)."""
        stale_after = 3 * self.config.heartbeat_interval
        now = self.monotonic()
        for alloc in job.allocation:
            node = self.model.nodes.get(alloc.node)
            if (
                node is None
                or not node.connected
                or node.inventory.simulated
                or node.telemetry_heard is None
                or now - node.telemetry_heard > stale_after
            ):
                return False
        return True
