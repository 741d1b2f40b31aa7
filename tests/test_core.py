"""The scheduler's services driven step by step in-process, with a fake clock and no network."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.jobspec import JobSpec
from rota.messages import (
    EventAck,
    Heartbeat,
    Hello,
    KillOrder,
    LaunchOrder,
    RunningAttempt,
    Welcome,
)
from rota.scheduler.cluster.model import HistoryKind, NodeState
from rota.scheduler.core.errors import AuthError, UserError
from rota.scheduler.core.jobs import SubmitItem
from rota.scheduler.core.tokens import hash_token
from rota.scheduler.policy.snapshot import Plan
from rota.scheduler.store.protocols import JobQuery
from rota.states import JobState
from tests.support.core import Harness, inventory


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def test_launch_start_exit_life_cycle(h: Harness) -> None:
    h.connect("n1")
    job = h.submit(gpus=1)
    assert h.state(job) is JobState.PENDING
    (order,) = h.schedule()
    node, launch = order
    assert node == "n1" and isinstance(launch, LaunchOrder)
    assert launch.gpu_indices == (0,) and launch.gpu_uuids == ("GPU-0",)
    assert launch.env["ROTA_JOB_ID"] == job and launch.env["ROTA_GPU_INDICES"] == "0"
    assert h.state(job) is JobState.CONFIGURING
    h.event("n1", job, "STARTED")
    assert h.state(job) is JobState.RUNNING
    assert h.event("n1", job, "EXITED", exit_code=3) == [("n1", EventAck(int(job), 1))]
    record, events = h.s.jobs.get(job)
    assert record.state is JobState.FAILED and record.exit_code == 3
    assert [e.new_state for e in events] == ["PENDING", "CONFIGURING", "RUNNING", "FAILED"]


@pytest.mark.parametrize(
    ("kind", "exit_code", "oom", "final"),
    [
        ("EXITED", 0, False, JobState.COMPLETED),
        ("EXITED", 0, True, JobState.COMPLETED),
        ("EXITED", 137, True, JobState.OUT_OF_MEMORY),
        ("EXITED", 1, False, JobState.FAILED),
        ("TIMED_OUT", 143, False, JobState.TIMEOUT),
        ("LAUNCH_FAILED", 0, False, JobState.FAILED),
    ],
)
def test_final_states(h: Harness, kind: str, exit_code: int, oom: bool, final: JobState) -> None:
    h.connect("n1")
    job = h.submit(gpus=1)
    h.schedule()
    h.event("n1", job, kind, exit_code=exit_code, oom_killed=oom, message="boom")
    assert h.state(job) is final
    if oom and exit_code == 0:
        assert any(e.kind == "warning" for e in h.s.jobs.get(job)[1])


def test_engine_fault_on_launch_requeues_instead_of_failing(h: Harness) -> None:
    h.connect("n1")
    job = h.submit(gpus=1)
    h.schedule()
    h.event("n1", job, "LAUNCH_FAILED", message="engine down", engine_fault=True)
    assert h.state(job) is JobState.PENDING
    assert h.schedule() == [], "no launch on a node whose engine failed"


def test_gpus_are_never_shared_and_freed_only_when_the_job_ends(h: Harness) -> None:
    h.connect("n1", gpus=2)
    a, b = h.submit(gpus=2), h.submit(gpus=2)
    assert len(h.schedule()) == 1
    assert h.s.jobs.get(b)[0].reason == "Resources"
    h.event("n1", a, "STARTED")
    assert h.schedule() == []
    h.event("n1", a, "EXITED", exit_code=0)
    ((_, launch),) = h.schedule()
    assert launch.job_id == int(b)


def test_cancel_running_job_orders_a_kill_then_ends_cancelled(h: Harness) -> None:
    h.connect("n1")
    job = h.submit(gpus=1)
    h.schedule()
    h.event("n1", job, "STARTED")
    results, orders = h.s.jobs.cancel([job], "ann")
    assert results[0].ok
    assert orders == [("n1", KillOrder(int(job), 1, "cancelled by ann", h.config.kill_grace))]
    assert h.state(job) is JobState.COMPLETING
    h.event("n1", job, "KILLED", exit_code=143)
    assert h.state(job) is JobState.CANCELLED


def test_stale_report_from_an_old_attempt_changes_nothing(h: Harness) -> None:
    h.connect("n1")
    h.connect("n2")
    job = h.submit(gpus=1, requeue=True)
    h.schedule()
    first_node = h.s.jobs.get(job)[0].allocation[0].node
    h.s.agents.disconnected(first_node, h.sessions[first_node])
    h.clock.now += h.config.node_grace + 1
    other = "n2" if first_node == "n1" else "n1"
    h.engine.steps.heartbeat(other, h.sessions[other], Heartbeat())
    h.tick()
    assert h.state(job) is JobState.PENDING
    ((second_node, launch),) = h.schedule()
    assert launch.attempt == 2 and second_node != first_node
    h.connect(first_node, attempts=(RunningAttempt(int(job), 1),))
    orders = h.event(first_node, job, "EXITED", attempt=1, exit_code=9)
    assert orders == [(first_node, EventAck(int(job), 1))]
    assert h.state(job) is JobState.CONFIGURING
    assert h.s.jobs.get(job)[0].attempt == 2


def test_reconnect_keeps_running_attempts_and_resends_unstarted_launches(h: Harness) -> None:
    h.connect("n1")
    running, configuring = h.submit(gpus=1), h.submit(gpus=1)
    h.schedule()
    h.event("n1", running, "STARTED")
    orders = h.connect("n1", attempts=(RunningAttempt(int(running), 1),))
    welcome = orders[0][1]
    assert isinstance(welcome, Welcome)
    assert {a.job_id for a in welcome.keep} == {int(running), int(configuring)}
    relaunch = [o for _, o in orders if isinstance(o, LaunchOrder)]
    assert [o.job_id for o in relaunch] == [int(configuring)]


def test_running_job_missing_after_reconnect_is_node_fail(h: Harness) -> None:
    h.connect("n1")
    job = h.submit(gpus=1)
    h.schedule()
    h.event("n1", job, "STARTED")
    h.connect("n1", attempts=())
    assert h.state(job) is JobState.NODE_FAIL


def test_restart_rebuilds_from_the_database(h: Harness) -> None:
    h.connect("n1")
    job = h.submit(gpus=1)
    h.schedule()
    h.event("n1", job, "STARTED")
    h.restart()
    assert h.state(job) is JobState.RUNNING
    h.connect("n1", attempts=(RunningAttempt(int(job), 1),))
    h.event("n1", job, "EXITED", exit_code=0)
    assert h.state(job) is JobState.COMPLETED


def test_submission_checks_against_registered_nodes(h: Harness) -> None:
    with pytest.raises(UserError, match="no node is registered"):
        h.submit(gpus=1)
    h.connect("n1", gpus=2)
    with pytest.raises(
        UserError, match=r"resources.gpus: 4 GPU\(s\) per node, but the largest node, n1, has 2$"
    ):
        h.submit(gpus=4)
    with pytest.raises(UserError, match="dependency: job 77 does not exist"):
        h.submit(dependency="afterok:77")
    assert h.s.jobs.list_jobs(JobQuery()) == [], "a refused submission stores nothing"


def test_idempotent_submission(h: Harness) -> None:
    h.connect("n1")
    item = SubmitItem(JobSpec(image="img", command=("true",)), client_request_id="abc")
    (first,) = h.s.jobs.submit([item], "ann")
    (again,) = h.s.jobs.submit([item], "ann")
    assert again.job_ids == first.job_ids and again.duplicate
    h.restart()
    (after_restart,) = h.s.jobs.submit([item], "ann")
    assert after_restart.job_ids == first.job_ids


def test_dependencies_hold_and_array_tasks(h: Harness) -> None:
    h.connect("n1", gpus=4)
    first = h.submit(gpus=1, command=("false",))
    ok_dep = h.submit(gpus=1, dependency=f"afterok:{first}")
    any_dep = h.submit(gpus=1, dependency=f"afterany:{first}")
    held = h.submit(gpus=1, hold=True)
    h.schedule()
    assert h.s.jobs.get(ok_dep)[0].reason == "Dependency"
    assert h.s.jobs.get(held)[0].reason == "JobHeldUser"
    h.event("n1", first, "EXITED", exit_code=1)
    h.schedule()
    assert h.s.jobs.get(ok_dep)[0].reason == "DependencyNeverSatisfied"
    assert h.state(any_dep) is JobState.CONFIGURING
    (result,) = h.s.jobs.submit(
        [SubmitItem(JobSpec(image="i", command=("true",), array="0-2"))], "ann"
    )
    array_id = result.job_ids[0].split("_")[0]
    assert result.job_ids == (f"{array_id}_0", f"{array_id}_1", f"{array_id}_2")
    assert len(h.s.lookup.resolve(array_id)) == 3
    (launch,) = [
        o for _, o in h.schedule() if isinstance(o, LaunchOrder) and o.display_id == f"{array_id}_1"
    ]
    assert launch.env["ROTA_ARRAY_JOB_ID"] == array_id and launch.env["ROTA_ARRAY_TASK_ID"] == "1"


def test_tokens(tmp_path: Path) -> None:
    h = Harness(tmp_path, open_registration=False)
    with pytest.raises(AuthError, match="not registered"):
        h.connect("n1")
    h.store.nodes.save(NodeState(name="n1", token_hash=hash_token("right")))
    h.restart()
    with pytest.raises(AuthError, match="wrong join token"):
        h.connect("n1")
    ok = h.engine.steps.hello(Hello("n1", "right", inventory(1)), 5)
    assert isinstance(ok[0][1], Welcome)


def _stop_for_requeue(h: Harness, job: str, how: str) -> None:
    if how == "requeue":
        ((result,), _orders) = h.s.control.control("requeue", [job], "bob")
        assert result.ok
    else:  # the policy preempts it
        h.s.planner.apply(Plan(preemptions=(int(job),)))
    assert h.state(job) is JobState.COMPLETING


@pytest.mark.parametrize("how", ["requeue", "preempt"])
def test_cancel_of_a_job_stopping_for_a_requeue_ends_it_cancelled(h: Harness, how: str) -> None:
    h.connect("n1")
    job = h.submit(gpus=1, requeue=True)
    h.schedule()
    h.event("n1", job, "STARTED")
    _stop_for_requeue(h, job, how)
    (result,), orders = h.s.jobs.cancel([job], "ann")
    assert result.ok and orders == [], "the kill is on its way already"
    h.event("n1", job, "KILLED", exit_code=137)
    record, events = h.s.jobs.get(job)
    assert (record.state, record.attempt, record.reason) == (
        JobState.CANCELLED,
        1,
        "cancelled by ann",
    )
    assert any(e.kind is HistoryKind.INFO and "cancelled by ann" in e.reason for e in events)
    assert h.schedule() == [], "a cancelled job is not launched again"


def test_cancel_of_a_stopping_job_holds_when_its_node_is_lost(h: Harness) -> None:
    h.connect("n1")
    job = h.submit(gpus=1, requeue=True)
    h.schedule()
    h.event("n1", job, "STARTED")
    h.s.jobs.cancel([job], "ann")
    h.s.agents.disconnected("n1", h.sessions["n1"])
    h.clock.now += h.config.node_grace + 1
    h.tick()
    assert h.state(job) is JobState.CANCELLED, "not requeued after NODE_FAIL"
