"""The snapshot builder keeps views between passes and rebuilds only those of changed jobs: whatever
happens (submissions, holds, dependencies, begin times, starts, exits, cancels, requeues, node
loss), every snapshot must equal the one built afresh from every live job."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rota.scheduler.store.protocols import JobQuery
from rota.states import JobState
from tests.support.world import NODES, World, assert_current

step = st.one_of(
    st.tuples(st.just("submit"), st.integers(1, 4), st.sampled_from(["", "hold", "dep", "begin"])),
    st.tuples(st.sampled_from(["hold", "release", "requeue", "cancel"]), st.integers(0, 30)),
    st.tuples(st.sampled_from(["start", "exit0", "exit1"]), st.integers(0, 30)),
    st.tuples(st.sampled_from(["gpu_error", "gpu_ok", "drop", "join"]), st.sampled_from(NODES)),
    st.tuples(st.just("tick"), st.integers(1, 120)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=40))
def test_kept_views_always_equal_fresh_ones(steps: list[tuple[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp))
        try:
            for action, *args in steps:
                world.do(action, args[0] if len(args) == 1 else tuple(args))
                world.schedule()
                assert_current(world.s, world.s.planner.snapshot())
        finally:
            world.store.close()


def test_estimated_starts_reach_listed_jobs(tmp_path: Path) -> None:
    world = World(tmp_path)
    for _ in range(3):  # fill both nodes (4 GPUs each) and queue one more
        world.do("submit", (4, ""))
    world.schedule()
    listed = world.s.jobs.list_jobs(JobQuery(states=(JobState.PENDING,)))
    assert [j.display_id for j in listed] == [world.ids[2]]
    assert listed[0].estimated_start == world.clock.now + 600, "starts when a 600 s job ends"
    running = world.s.jobs.list_jobs(JobQuery(states=(JobState.CONFIGURING,)))
    assert running and all(j.estimated_start is None for j in running)


def test_gpu_error_and_resume_reach_the_next_snapshot(tmp_path: Path) -> None:
    world = World(tmp_path)
    world.do("submit", (4, "hold"))  # a snapshot lists nodes while a job waits to be placed
    world.do("gpu_error", "n1")
    n1 = next(n for n in world.schedule().nodes if n.name == "n1")
    assert [g.allocatable for g in n1.gpus] == [True, False, True, True]
    world.do("gpu_ok", "n1")
    n1 = next(n for n in world.schedule().nodes if n.name == "n1")
    assert not n1.gpus[1].allocatable, "marked unhealthy until resumed"
    world.s.gpus.resume("n1", 1, "admin")
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
        return world.s.model.jobs[int(dependant)].reason

    assert reason() == "Dependency"
    world.s.jobs.cancel([target], "ann")
    assert reason() == "DependencyNeverSatisfied"
    world.s.control.control("requeue", [target], "ann")
    assert reason() == "Dependency", "the target is pending again"
    world.s.control.control("release", [target], "ann")
    world.schedule()
    world.do("start", 0)
    world.do("exit0", 0)
    world.schedule()
    assert world.s.model.jobs[int(dependant)].state is JobState.CONFIGURING
