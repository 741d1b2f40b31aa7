"""A random-walk world over the scheduler's services, and the check that kept snapshot views
equal views built afresh (tests/test_core_views.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rota.jobspec import JobSpec
from rota.messages import AgentEvent, GpuTelemetry, Heartbeat, Hello
from rota.scheduler.config import SchedulerConfig, policy_config
from rota.scheduler.core.jobs import SubmitItem
from rota.scheduler.core.services import Services, build_services
from rota.scheduler.core.views import JobViews
from rota.scheduler.engine import Engine
from rota.scheduler.policy import make_policy
from rota.scheduler.policy.snapshot import RunningJob, Snapshot
from rota.scheduler.store.store import Store
from rota.states import JobState
from tests.support.core import Clock, inventory

NODES = ("n1", "n2")


def fresh_running(services: Services, snap: Snapshot) -> dict[int, RunningJob]:
    """Running views built now; an unstarted job's start is the pass time, so compare without."""
    builder = services.snapshots
    return {
        j.id: _unstarted(builder.running_view(j, snap.now), j.start_time)
        for j in services.model.jobs.values()
        if j.state.active
    }


def _unstarted(view: RunningJob, start: float | None) -> RunningJob:
    return view if start is not None else dataclasses.replace(view, start_time=0.0)


def assert_current(services: Services, snap: Snapshot) -> None:
    """``snap``'s job views equal views built afresh from every live job."""
    builder, jobs = services.snapshots, services.model.jobs
    live = [j for j in jobs.values() if j.state is JobState.PENDING]
    kept, builder.views = builder.views, JobViews(set())  # resolve dependencies afresh
    try:
        expected = {j.id: builder.pending_view(j, builder.blocked(j, snap.now)) for j in live}
    finally:
        builder.views = kept
    assert {v.id: v for v in snap.pending} == expected
    assert len(snap.pending) == len(expected), "a job twice in the pending views"
    kept = {
        v.id: _unstarted(v, jobs[v.id].start_time if v.id in jobs else None) for v in snap.running
    }
    assert kept == fresh_running(services, snap)
    assert len(snap.running) == len(kept)


class World:
    """Two 4-GPU nodes under the ``rota`` policy, driven by named random steps."""

    def __init__(self, root: Path) -> None:
        self.clock = Clock()
        config = SchedulerConfig(open_registration=True)
        self.store = Store(f"sqlite:///{root / 'db'}")
        self.s = build_services(
            self.store,
            config,
            self.clock,
            make_policy("rota", policy_config(config)),
            monotonic=self.clock.monotonic,
        )
        self.engine = Engine(self.s)
        self.sessions: dict[str, int] = {}
        self.ids: list[str] = []
        for node in NODES:
            self.join(node)

    def join(self, node: str) -> None:
        if node not in self.sessions:
            self.sessions[node] = len(self.ids) + 1000 * (1 + len(self.sessions))
            self.engine.steps.hello(Hello(node, "tok", inventory(4)), self.sessions[node])

    def job(self, n: int) -> str | None:
        return self.ids[n % len(self.ids)] if self.ids else None

    def do(self, action: str, arg: object) -> None:
        s, now = self.s, self.clock.now
        if action == "submit":
            assert isinstance(arg, tuple)
            gpus, extra = arg
            fields: dict[str, object] = {}
            if extra == "dep" and self.ids:
                fields["dependency"] = f"afterok:{self.ids[-1]}"
            if extra == "begin":
                fields["begin_time"] = now + 60
            spec = JobSpec(image="i", command=("true",), gpus=gpus, time_limit=600, **fields)  # type: ignore[arg-type]
            (result,) = s.jobs.submit([SubmitItem(spec)], "ann")
            self.ids.extend(result.job_ids)
            if extra == "hold":
                s.control.control("hold", result.job_ids, "ann")
        elif action in ("hold", "release", "requeue", "cancel"):
            target = self.job(int(arg))  # type: ignore[call-overload]
            if target is not None:
                if action == "cancel":
                    s.jobs.cancel([target], "ann")
                else:
                    s.control.control(action, [target], "ann")
        elif action in ("start", "exit0", "exit1"):
            target = self.job(int(arg))  # type: ignore[call-overload]
            job = s.model.jobs.get(int(target)) if target else None
            if job is not None and job.state.active and job.allocation:
                node = job.allocation[0].node
                if node in self.sessions:
                    kind = "STARTED" if action == "start" else "EXITED"
                    ev = AgentEvent(
                        job.id, job.attempt, kind, time=now, exit_code=action[-1:] == "1"
                    )
                    s.agents.event(node, self.sessions[node], ev)
        elif action in ("gpu_error", "gpu_ok"):
            node = str(arg)
            if node in self.sessions:
                error = "Xid 79" if action == "gpu_error" else ""
                gpus = tuple(
                    GpuTelemetry(i, f"GPU-{i}", error=error if i == 1 else "") for i in range(4)
                )
                self.engine.steps.heartbeat(node, self.sessions[node], Heartbeat(gpus=gpus))
        elif action == "drop":
            node = str(arg)
            if node in self.sessions:
                s.agents.disconnected(node, self.sessions.pop(node))
        elif action == "join":
            self.join(str(arg))
        else:
            self.clock.now += int(arg)  # type: ignore[call-overload]
            self.engine.steps.tick()

    def schedule(self) -> Snapshot:
        planner = self.s.planner
        snap = planner.snapshot()
        assert_current(self.s, snap)
        planner.apply(self.s.policy.decide(snap))
        return snap
