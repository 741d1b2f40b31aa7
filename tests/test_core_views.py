"""Core keeps snapshot views between passes and rebuilds only those of changed jobs: whatever
happens (submissions, holds, dependencies, begin times, starts, exits, cancels, requeues, node
loss), every snapshot must equal the one built afresh from every live job."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rota.jobspec import JobSpec
from rota.messages import AgentEvent, GpuTelemetry, Heartbeat, Hello
from rota.scheduler.config import SchedulerConfig, policy_config
from rota.scheduler.core import Core, SubmitItem
from rota.scheduler.core.views import JobViews
from rota.scheduler.policy import make_policy
from rota.scheduler.policy.snapshot import RunningJob, Snapshot
from rota.scheduler.store.store import JobQuery, Store
from rota.states import JobState
from tests.test_core import Clock, inventory

NODES = ("n1", "n2")

step = st.one_of(
    st.tuples(st.just("submit"), st.integers(1, 4), st.sampled_from(["", "hold", "dep", "begin"])),
    st.tuples(st.sampled_from(["hold", "release", "requeue", "cancel"]), st.integers(0, 30)),
    st.tuples(st.sampled_from(["start", "exit0", "exit1"]), st.integers(0, 30)),
    st.tuples(st.sampled_from(["gpu_error", "gpu_ok", "drop", "join"]), st.sampled_from(NODES)),
    st.tuples(st.just("tick"), st.integers(1, 120)),
)


def fresh_running(core: Core, snap: Snapshot) -> dict[int, RunningJob]:
    """Running views built now; an unstarted job's start is the pass time, so compare without."""
    return {
        j.id: _unstarted(core._running_view(j, snap.now), j.start_time)
        for j in core.jobs.values()
        if j.state.active
    }


def _unstarted(view: RunningJob, start: float | None) -> RunningJob:
    return view if start is not None else dataclasses.replace(view, start_time=0.0)


def assert_current(core: Core, snap: Snapshot) -> None:
    live = [j for j in core.jobs.values() if j.state is JobState.PENDING]
    kept, core._job_views = core._job_views, JobViews(set())  # resolve dependencies afresh
    try:
        expected = {j.id: core._pending_view(j, core._blocked(j, snap.now)) for j in live}
    finally:
        core._job_views = kept
    assert {v.id: v for v in snap.pending} == expected
    assert len(snap.pending) == len(expected), "a job twice in the pending views"
    kept = {
        v.id: _unstarted(v, core.jobs[v.id].start_time if v.id in core.jobs else None)
        for v in snap.running
    }
    assert kept == fresh_running(core, snap)
    assert len(snap.running) == len(kept)


class World:
    def __init__(self, root: Path) -> None:
        self.clock = Clock()
        config = SchedulerConfig(open_registration=True)
        self.core = Core(
            Store(f"sqlite:///{root / 'db'}"),
            config,
            self.clock,
            make_policy("rota", policy_config(config)),
        )
        self.sessions: dict[str, int] = {}
        self.ids: list[str] = []
        for node in NODES:
            self.join(node)

    def join(self, node: str) -> None:
        if node not in self.sessions:
            self.sessions[node] = len(self.ids) + 1000 * (1 + len(self.sessions))
            self.core.agent_hello(Hello(node, "tok", inventory(4)), self.sessions[node])

    def job(self, n: int) -> str | None:
        return self.ids[n % len(self.ids)] if self.ids else None

    def do(self, action: str, arg: object) -> None:
        core, now = self.core, self.clock.now
        if action == "submit":
            assert isinstance(arg, tuple)
            gpus, extra = arg
            fields: dict[str, object] = {}
            if extra == "dep" and self.ids:
                fields["dependency"] = f"afterok:{self.ids[-1]}"
            if extra == "begin":
                fields["begin_time"] = now + 60
            spec = JobSpec(image="i", command=("true",), gpus=gpus, time_limit=600, **fields)  # type: ignore[arg-type]
            (result,) = core.submit([SubmitItem(spec)], "ann")
            self.ids.extend(result.job_ids)
            if extra == "hold":
                core.control("hold", result.job_ids, "ann")
        elif action in ("hold", "release", "requeue", "cancel"):
            target = self.job(int(arg))  # type: ignore[call-overload]
            if target is not None:
                if action == "cancel":
                    core.cancel([target], "ann")
                else:
                    core.control(action, [target], "ann")
        elif action in ("start", "exit0", "exit1"):
            target = self.job(int(arg))  # type: ignore[call-overload]
            job = core.jobs.get(int(target)) if target else None
            if job is not None and job.state.active and job.allocation:
                node = job.allocation[0].node
                if node in self.sessions:
                    kind = "STARTED" if action == "start" else "EXITED"
                    ev = AgentEvent(
                        job.id, job.attempt, kind, time=now, exit_code=action[-1:] == "1"
                    )
                    core.agent_event(node, self.sessions[node], ev)
        elif action in ("gpu_error", "gpu_ok"):
            node = str(arg)
            if node in self.sessions:
                error = "Xid 79" if action == "gpu_error" else ""
                gpus = tuple(
                    GpuTelemetry(i, f"GPU-{i}", error=error if i == 1 else "") for i in range(4)
                )
                core.agent_heartbeat(node, self.sessions[node], Heartbeat(gpus=gpus))
        elif action == "drop":
            node = str(arg)
            if node in self.sessions:
                core.agent_disconnected(node, self.sessions.pop(node))
        elif action == "join":
            self.join(str(arg))
        else:
            self.clock.now += int(arg)  # type: ignore[call-overload]
            core.tick()

    def schedule(self) -> Snapshot:
        snap = self.core.snapshot()
        assert_current(self.core, snap)
        self.core.apply(self.core.policy.decide(snap), snap.version)
        return snap


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=40))
def test_kept_views_always_equal_fresh_ones(steps: list[tuple[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp))
        try:
            for action, *args in steps:
                world.do(action, args[0] if len(args) == 1 else tuple(args))
                world.schedule()
                assert_current(world.core, world.core.snapshot())
        finally:
            world.core.store.close()


def test_estimated_starts_reach_listed_jobs(tmp_path: Path) -> None:
    world = World(tmp_path)
    for _ in range(3):  # fill both nodes (4 GPUs each) and queue one more
        world.do("submit", (4, ""))
    world.schedule()
    listed = world.core.list_jobs(JobQuery(states=(JobState.PENDING,)))
    assert [j.display_id for j in listed] == [world.ids[2]]
    assert listed[0].estimated_start == world.clock.now + 600, "starts when a 600 s job ends"
    running = world.core.list_jobs(JobQuery(states=(JobState.CONFIGURING,)))
    assert running and all(j.estimated_start is None for j in running)


def test_gpu_error_and_resume_reach_the_next_snapshot(tmp_path: Path) -> None:
    world = World(tmp_path)
    world.do("gpu_error", "n1")
    n1 = next(n for n in world.schedule().nodes if n.name == "n1")
    assert [g.allocatable for g in n1.gpus] == [True, False, True, True]
    world.do("gpu_ok", "n1")
    n1 = next(n for n in world.schedule().nodes if n.name == "n1")
    assert not n1.gpus[1].allocatable, "marked unhealthy until resumed"
    world.core.resume_gpu("n1", 1, "admin")
    n1 = next(n for n in world.schedule().nodes if n.name == "n1")
    assert all(g.allocatable for g in n1.gpus)


def test_a_dependency_follows_its_target_through_cancel_requeue_and_success(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    world.do("submit", (4, "hold"))
    world.do("submit", (1, "dep"))  # afterok on the held job
    target, dependant = world.ids

    def reason() -> str:
        world.schedule()
        return world.core.jobs[int(dependant)].reason

    assert reason() == "Dependency"
    world.core.cancel([target], "ann")
    assert reason() == "DependencyNeverSatisfied"
    world.core.control("requeue", [target], "ann")
    assert reason() == "Dependency", "the target is pending again"
    world.core.control("release", [target], "ann")
    world.schedule()
    world.do("start", 0)
    world.do("exit0", 0)
    world.schedule()
    assert world.core.jobs[int(dependant)].state is JobState.CONFIGURING
