"""GPU health, occupancy and idle jobs (issue 3; rules in ``cluster.gpus`` and docs/gpus.md).

Mixed into Core above AgentsCore: it extends the hello, the heartbeat, the snapshot's node view,
apply and the periodic tick, and adds the admin actions ``resume_gpu`` and ``drain_gpu``.
Unhealthy marks are persisted (``Store.save_gpu_marks``); everything else here is derived from
telemetry and kept in memory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from rota.messages import Heartbeat, Hello
from rota.scheduler.cluster.gpus import (
    AUTO,
    GpuDisplay,
    GpuMark,
    GpuTrack,
    display,
    human_duration,
)
from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeState
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.agents import AgentsCore
from rota.scheduler.core.base import NotFound, Orders, UserError, log
from rota.scheduler.policy import Policy
from rota.scheduler.policy.snapshot import GpuView, NodeView, Plan
from rota.scheduler.store.store import Store
from rota.states import JobState


class GpusCore(AgentsCore):
    """Marks GPUs unhealthy, dirty or busy from heartbeats; warns about (or cancels) jobs
    whose GPUs stay idle."""

    def __init__(
        self,
        store: Store,
        config: SchedulerConfig,
        clock: Callable[[], float],
        policy: Policy,
    ) -> None:
        super().__init__(store, config, clock, policy)
        self.gpu_marks: dict[str, dict[int, GpuMark]] = {
            name: {m.index: m for m in marks} for name, marks in store.gpu_marks().items()
        }
        self._gpu_tracks: dict[str, dict[int, GpuTrack]] = {}
        # per node: GPUs that take no jobs (dropped when its marks or tracks change), and the
        # (base view, blocked, links, final view) of its last snapshot
        self._gpu_blocked: dict[str, frozenset[int]] = {}
        self._views: dict[str, tuple[NodeView, frozenset[int], object, NodeView]] = {}
        self._links: dict[str, tuple[object, dict[tuple[int, int], str]]] = {}
        self._holders_index: dict[str, dict[int, JobRecord]] = {}
        self._holders_version = -1
        now = clock()
        # job id -> last time one of its GPUs was seen busy (a restart starts counting anew)
        self._active_at: dict[int, float] = {}
        self._idle_warned: dict[int, float] = {}  # job id -> the idle stretch it was warned for
        for job in self.jobs.values():
            if job.state.active:
                self._active_at[job.id] = now
                warnings = [
                    e.reason
                    for e in store.events(job.id)
                    if e.kind == "warning" and e.attempt == job.attempt
                ]
                job.warning = warnings[-1] if warnings else ""

    # ------------------------------------------------------------ agents

    def agent_hello(self, hello: Hello, session: int) -> Orders:
        orders = super().agent_hello(hello, session)
        node = self.nodes[hello.node_name]
        self._gpu_tracks[node.name] = {}
        self._gpu_blocked.pop(node.name, None)
        self._rekey_marks(node)
        return orders

    def _rekey_marks(self, node: NodeState) -> None:
        """Follow marked GPUs to their index in the new inventory (by UUID)."""
        marks = self.gpu_marks.get(node.name)
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
            self.gpu_marks[node.name] = kept
            self.store.save_gpu_marks(node.name, kept.values())

    def agent_heartbeat(self, node_name: str, session: int, beat: Heartbeat) -> bool:
        changed = super().agent_heartbeat(node_name, session, beat)
        node = self.nodes.get(node_name)
        if node is None or node.session != session:
            return changed
        return self._check_gpus(node) or changed

    def _check_gpus(self, node: NodeState) -> bool:
        """Apply one fresh heartbeat: mark, auto-resume, dirty, busy. True when allocatability
        changed."""
        now, cfg = self.clock(), self.config
        telemetry = {t.index: t for t in node.telemetry}
        holders = self._holders(node.name)
        tracks = self._gpu_tracks.setdefault(node.name, {})
        marks = self.gpu_marks.setdefault(node.name, {})
        changed = marks_changed = False
        jobs: list[JobRecord] = []
        events: list[JobEvent] = []
        for gpu in node.inventory.gpus:
            t = telemetry.get(gpu.index)
            track = tracks.setdefault(gpu.index, GpuTrack())
            job = holders.get(gpu.index)
            if t is None:  # no sample of this GPU (an agent without telemetry): no judgement
                changed = track.occupancy(None, "", now, cfg) or changed
                continue
            if job is not None and t.utilization > 0:
                self._active_at[job.id] = now
            problem = track.problem(t, now, cfg)
            mark = marks.get(gpu.index)
            if problem and mark is None:
                marks[gpu.index] = GpuMark(gpu.index, gpu.uuid, problem, now)
                marks_changed = True
                log.warning("GPU %d on %s unhealthy: %s", gpu.index, node.name, problem)
                if job is not None:
                    text = f"GPU {gpu.index} on {node.name} unhealthy: {problem}"
                    events.append(self._warn(job, text))
                    jobs.append(job)
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
            changed = True
        if jobs:
            self._save(jobs, events)
        if changed:
            self._gpu_blocked.pop(node.name, None)
            self.version += 1
        return changed

    def _holders(self, node_name: str) -> dict[int, JobRecord]:
        """GPU index -> active job on that node; the index over all nodes is rebuilt only when
        the model's version changed (every allocation change bumps it), not per heartbeat."""
        if self._holders_version != self.version:
            index: dict[str, dict[int, JobRecord]] = {}
            for job in self.jobs.values():
                if job.state.active:
                    for alloc in job.allocation:
                        index.setdefault(alloc.node, {}).update(dict.fromkeys(alloc.gpus, job))
            self._holders_index, self._holders_version = index, self.version
        return self._holders_index.get(node_name, {})

    def _warn(self, job: JobRecord, text: str) -> JobEvent:
        job.warning = text
        return self._note(job, "warning", text)

    # ------------------------------------------------------------ planning

    def _node_view(self, node: NodeState) -> NodeView:
        """The base view with GPUs that take no jobs made unallocatable and the topology;
        the last result is reused while the base view, the blocked GPUs and links are equal."""
        view = super()._node_view(node)
        blocked = self._blocked_gpus(node.name)
        links = self._node_links(node)
        last = self._views.get(node.name)
        if (
            last is not None
            and last[1] is blocked
            and last[2] is links
            and (last[0] is view or last[0] == view)
        ):
            return last[3]
        final = self._with_gpu_state(view, blocked, links)
        self._views[node.name] = (view, blocked, links, final)
        return final

    @staticmethod
    def _with_gpu_state(
        view: NodeView, blocked: frozenset[int], links: dict[tuple[int, int], str]
    ) -> NodeView:
        changes: dict[str, Any] = {}
        if blocked and any(g.allocatable and g.index in blocked for g in view.gpus):
            changes["gpus"] = tuple(
                GpuView(g.index, g.name, g.memory_total, False) if g.index in blocked else g
                for g in view.gpus
            )
        if links:
            changes["links"] = links
        return dataclasses.replace(view, **changes) if changes else view

    def _blocked_gpus(self, node_name: str) -> frozenset[int]:
        """Indices that take no jobs: marked unhealthy, dirty or busy (cached per node)."""
        found = self._gpu_blocked.get(node_name)
        if found is None:
            tracks = self._gpu_tracks.get(node_name) or {}
            found = frozenset(self.gpu_marks.get(node_name) or ()) | {
                i for i, t in tracks.items() if t.dirty or t.busy
            }
            self._gpu_blocked[node_name] = found
        return found

    def _node_links(self, node: NodeState) -> dict[tuple[int, int], str]:
        """The topology as the policy reads it, cached per reported inventory."""
        cached = self._links.get(node.name)
        if cached is None or cached[0] is not node.inventory:
            links = {
                (min(x.a, x.b), max(x.a, x.b)): x.level for x in node.inventory.links if x.a != x.b
            }
            cached = (node.inventory, links)
            self._links[node.name] = cached
        return cached[1]

    def apply(self, plan: Plan, version: int) -> Orders:
        attempts = {
            p.job_id: self.jobs[p.job_id].attempt for p in plan.placements if p.job_id in self.jobs
        }
        orders = super().apply(plan, version)
        for job_id, attempt in attempts.items():
            job = self.jobs.get(job_id)
            if job is not None and job.attempt != attempt:
                job.warning = ""  # a new attempt starts without the old one's warnings
        return orders

    # ------------------------------------------------------------ display

    def gpu_display(self, node: NodeState, holders: dict[int, str]) -> dict[int, GpuDisplay]:
        """What ``ginfo`` shows for every GPU of ``node`` (``holders``: index -> job id)."""
        telemetry = {t.index: t for t in node.telemetry}
        marks = self.gpu_marks.get(node.name) or {}
        tracks = self._gpu_tracks.get(node.name) or {}
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

    def resume_gpu(self, node_name: str, index: int, user: str) -> str:
        """Return an unhealthy GPU to service; the message says what happened."""
        node, _uuid = self._gpu_of(node_name, index)
        marks = self.gpu_marks.get(node.name) or {}
        mark = marks.pop(index, None)
        if mark is None:
            return f"GPU {index} on {node.name} is not marked unhealthy; nothing to do"
        self.store.save_gpu_marks(node.name, marks.values())
        self._gpu_tracks.get(node.name, {}).pop(index, None)
        self._gpu_blocked.pop(node.name, None)
        self.version += 1
        log.info("GPU %d on %s resumed by %s (was: %s)", index, node.name, user, mark.reason)
        message = f"GPU {index} on {node.name} resumed by {user} (was unhealthy: {mark.reason})"
        still = next((t.error for t in node.telemetry if t.index == index and t.error), "")
        if still and node.connected:
            message += f"; it still reports {still!r} and will be marked again"
        return message

    def drain_gpu(self, node_name: str, index: int, user: str, reason: str) -> str:
        """Take a GPU out of service by hand; only ``resume_gpu`` returns it."""
        node, uuid = self._gpu_of(node_name, index)
        why = reason or f"drained by {user}"
        marks = self.gpu_marks.setdefault(node.name, {})
        marks[index] = GpuMark(index, uuid, why, self.clock(), user)
        self.store.save_gpu_marks(node.name, marks.values())
        self._gpu_blocked.pop(node.name, None)
        job = self._holders(node.name).get(index)
        if job is not None:
            self._save([job], [self._warn(job, f"GPU {index} on {node.name}: {why}")])
        self.version += 1
        log.info("GPU %d on %s drained by %s: %s", index, node.name, user, why)
        return f"GPU {index} on {node.name} drained: {why}"

    def _gpu_of(self, node_name: str, index: int) -> tuple[NodeState, str]:
        node = self.nodes.get(node_name)
        if node is None:
            raise NotFound(f"node {node_name!r} is not registered")
        uuids = {g.index: g.uuid for g in node.inventory.gpus}
        if index not in uuids:
            raise UserError(
                f"node {node_name} has no GPU {index} (it reports {node.gpu_count} GPU(s))"
            )
        return node, uuids[index]

    # ------------------------------------------------------------ idle jobs

    def tick(self) -> Orders:
        orders = super().tick()
        orders.extend(self._idle_jobs())
        return orders

    def _idle_jobs(self) -> Orders:
        """Warn about (and, with ``idle_gpu_cancel_after``, cancel) jobs whose GPUs all stayed
        at 0 % utilisation; judged only on fresh telemetry of real (not simulated) GPUs."""
        for gone in set(self._active_at) - set(self.jobs):
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
        for job in list(self.jobs.values()):
            if (
                job.state is not JobState.RUNNING
                or not job.spec.gpus
                or not self._observed(job, now)
            ):
                continue
            since = max(job.start_time or now, self._active_at.get(job.id, 0.0))
            idle = now - since
            if cancel_after and idle >= cancel_after:
                why = (
                    f"cancelled: its GPUs were idle (0% utilisation) for {human_duration(idle)} "
                    "(idle_gpu_cancel_after)"
                )
                events.append(self._transition(job, JobState.COMPLETING, why))
                job.stop_state = JobState.CANCELLED.value
                job.reason = why
                orders.extend(self._kill_orders(job, why))
                jobs.append(job)
            elif warn_after and idle >= warn_after and self._idle_warned.get(job.id) != since:
                self._idle_warned[job.id] = since
                text = f"GPUs idle (0% utilisation) for {human_duration(idle)}"
                if cancel_after:
                    text += f"; cancelled at {human_duration(cancel_after)} idle"
                events.append(self._warn(job, text))
                jobs.append(job)
        if jobs:
            self._save(jobs, events)
            self.version += 1
        return orders

    def _observed(self, job: JobRecord, now: float) -> bool:
        """True when every node of the job sent fresh telemetry of real GPUs."""
        stale_after = 3 * self.config.heartbeat_interval
        for alloc in job.allocation:
            node = self.nodes.get(alloc.node)
            if (
                node is None
                or not node.connected
                or node.inventory.simulated
                or node.telemetry_time is None
                or now - node.telemetry_time > stale_after
            ):
                return False
        return True
