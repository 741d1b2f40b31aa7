"""Issue 5 in-process: node administration, lost nodes and idempotent submission, driven step by
step on the real services with a fake clock (the end-to-end fault tests are test_faults_*.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.jobspec import JobSpec
from rota.messages import Heartbeat, Hello, KillOrder, RunningAttempt, Welcome
from rota.scheduler.cluster.status import node_status
from rota.scheduler.core.errors import AuthError, Conflict, NotFound, UserError
from rota.scheduler.core.jobs import SubmitItem
from rota.scheduler.core.tokens import hash_token
from rota.scheduler.store.protocols import JobQuery
from rota.states import JobState
from tests.support.core import Harness, inventory


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path, open_registration=False, node_timeout=10.0, node_grace=60.0)


def join(h: Harness, node: str, token: str, gpus: int = 2, attempts: tuple = ()) -> list:
    session = len(h.sessions) + 100
    h.sessions[node] = session
    return h.engine.steps.hello(Hello(node, token, inventory(gpus), attempts), session)


def display(h: Harness, node: str) -> tuple[str, str, str, float | None]:
    model = h.s.model
    status = node_status(
        model.nodes[node], [j for j in model.jobs.values() if j.state.active], h.clock.now, 30
    )
    return status.state, status.reason, status.reason_by, status.since


def test_add_node_token_is_shown_once_and_stored_hashed(h: Harness) -> None:
    token = h.s.nodes.add("n1", {"rack": "r1"}, "root")
    (row,) = h.store.nodes.all()
    assert row.token_hash == hash_token(token) and token not in row.token_hash
    assert row.labels == {"rack": "r1"}
    with pytest.raises(Conflict, match="already registered"):
        h.s.nodes.add("n1", {}, "root")
    with pytest.raises(UserError):
        h.s.nodes.add("bad name", {}, "root")
    assert isinstance(join(h, "n1", token)[0][1], Welcome)
    assert h.s.planner.snapshots.node_view(h.s.model.nodes["n1"]).labels["rack"] == "r1"


def test_rotated_token_refuses_the_old_one(h: Harness) -> None:
    old = h.s.nodes.add("n1", {}, "root")
    new = h.s.nodes.add("n1", {}, "root", rotate_token=True)
    with pytest.raises(AuthError, match="wrong join token"):
        join(h, "n1", old)
    join(h, "n1", new)


def test_wrong_token_and_unknown_node_change_nothing(h: Harness) -> None:
    token = h.s.nodes.add("n1", {}, "root")
    before = h.store.nodes.all()
    with pytest.raises(AuthError, match="wrong join token for node 'n1'"):
        join(h, "n1", "guess")
    with pytest.raises(AuthError, match="gadmin node add ghost"):
        join(h, "ghost", token)
    assert h.store.nodes.all() == before
    assert set(h.s.model.nodes) == {"n1"} and not h.s.model.nodes["n1"].connected


def test_drain_then_resume(h: Harness) -> None:
    token = h.s.nodes.add("n1", {}, "root")
    join(h, "n1", token, gpus=2)
    running = h.submit(gpus=1)
    h.schedule()
    h.event("n1", running, "STARTED")
    h.clock.now += 5
    h.s.nodes.drain("n1", "bad fan", "alice")
    state, reason, by, since = display(h, "n1")
    assert (state, reason, by, since) == ("DRAINING", "bad fan", "alice", h.clock.now)
    waiting = h.submit(gpus=1)
    assert h.schedule() == [], "a drained node takes no new job"
    assert h.s.jobs.get(waiting)[0].reason == "NodeDown"
    h.event("n1", running, "EXITED", exit_code=0)
    assert display(h, "n1")[0] == "DRAINED"
    h.restart()  # the drain is durable
    join(h, "n1", token)
    assert display(h, "n1")[:3] == ("DRAINED", "bad fan", "alice")
    h.s.nodes.resume("n1", "alice")
    assert display(h, "n1")[0] == "IDLE"
    assert [o.job_id for _, o in h.schedule()] == [int(waiting)]
    with pytest.raises(Conflict, match="not drained"):
        h.s.nodes.resume("n1", "alice")
    with pytest.raises(UserError, match="reason"):
        h.s.nodes.drain("n1", " ", "alice")
    with pytest.raises(NotFound):
        h.s.nodes.drain("nope", "x", "alice")


def test_remove_refused_while_jobs_run_unless_forced(h: Harness) -> None:
    token = h.s.nodes.add("n1", {}, "root")
    join(h, "n1", token, gpus=2)
    again = h.submit(gpus=1, requeue=True)
    once = h.submit(gpus=1)
    h.schedule()
    with pytest.raises(Conflict, match="--force"):
        h.s.nodes.remove("n1", False, "root")
    result, orders = h.s.nodes.remove("n1", True, "root")
    assert result.requeued == (again,) and result.failed == (once,)
    kills = {(n, o.job_id, o.attempt) for n, o in orders if isinstance(o, KillOrder)}
    assert kills == {("n1", int(again), 1), ("n1", int(once), 1)}
    assert h.state(again) is JobState.PENDING and h.state(once) is JobState.NODE_FAIL
    assert h.store.nodes.all() == [] and "n1" not in h.s.model.nodes
    with pytest.raises(AuthError, match="not registered"):
        join(h, "n1", token)


def test_node_down_after_timeout_and_back_within_grace_keeps_its_jobs(h: Harness) -> None:
    token = h.s.nodes.add("n1", {}, "root")
    join(h, "n1", token)
    job = h.submit(gpus=1, requeue=True)
    h.schedule()
    h.event("n1", job, "STARTED")
    h.clock.now += 9
    h.tick()
    assert h.s.model.nodes["n1"].connected, "not DOWN before node_timeout"
    h.clock.now += 2
    h.tick()
    assert display(h, "n1")[0] == "DOWN"
    assert h.s.model.nodes["n1"].session == 0, "the old stream is stale (the engine closes it)"
    assert h.engine.steps.heartbeat("n1", h.sessions["n1"], Heartbeat()) is False
    h.clock.now += 40  # still within node_grace of the last heartbeat
    h.tick()
    assert h.state(job) is JobState.RUNNING
    orders = join(h, "n1", token, attempts=(RunningAttempt(int(job), 1),))
    assert orders[0][1].keep == (RunningAttempt(int(job), 1),)
    h.event("n1", job, "EXITED", exit_code=4)
    record = h.s.jobs.get(job)[0]
    assert (record.state, record.exit_code, record.attempt) == (JobState.FAILED, 4, 1)


def test_node_down_past_grace_ends_node_fail_and_requeues_once_allowed(h: Harness) -> None:
    token = h.s.nodes.add("n1", {}, "root")
    join(h, "n1", token)
    requeued, failed = h.submit(gpus=1, requeue=True), h.submit(gpus=1)
    h.schedule()
    h.s.agents.disconnected("n1", h.sessions["n1"])
    h.clock.now += 59
    h.tick()
    assert h.state(requeued) is JobState.CONFIGURING
    h.clock.now += 2
    h.tick()
    assert h.state(failed) is JobState.NODE_FAIL
    record, events = h.s.jobs.get(requeued)
    assert record.state is JobState.PENDING and record.attempt == 1
    assert ("CONFIGURING", "NODE_FAIL") in [(e.old_state, e.new_state) for e in events]
    # the node comes back still holding the old attempt: it is not kept (the agent stops it)
    orders = join(h, "n1", token, attempts=(RunningAttempt(int(requeued), 1),))
    assert orders[0][1].keep == ()


def test_duplicate_request_race_returns_the_stored_ids(h: Harness, monkeypatch) -> None:
    h.s.nodes.add("n1", {}, "root")
    item = SubmitItem(JobSpec(image="img", command=("true",)), client_request_id="req-1")
    (first,) = h.s.jobs.submit([item], "ann")
    real = h.store.jobs.known_requests
    calls = iter([{}])  # the first check misses the row another writer just committed
    monkeypatch.setattr(h.store.jobs, "known_requests", lambda ids: next(calls, None) or real(ids))
    (again,) = h.s.jobs.submit([item], "ann")
    assert again.job_ids == first.job_ids and again.duplicate
    assert len(h.s.jobs.list_jobs(JobQuery())) == 1
    with pytest.raises(UserError, match="unique"):
        h.s.jobs.submit([item, item], "ann")


def test_a_closed_stream_counts_node_grace_from_the_last_message_received(h: Harness) -> None:
    # the agent fences itself counting from its last contact; the scheduler must not count
    # from the moment it noticed the stream had closed, which may come much later
    token = h.s.nodes.add("n1", {}, "root")
    join(h, "n1", token)
    job = h.submit(gpus=1, requeue=True)
    h.schedule()
    h.event("n1", job, "STARTED")
    h.clock.now += 5
    h.engine.steps.heartbeat("n1", h.sessions["n1"], Heartbeat())
    last = h.clock.now
    h.clock.now += 8  # silent, within node_timeout, then the stream is seen closed
    h.s.agents.disconnected("n1", h.sessions["n1"])
    assert h.s.model.nodes["n1"].down_since == last
    h.clock.now = last + 59
    h.tick()
    assert h.state(job) is JobState.RUNNING
    h.clock.now = last + 61  # node_grace after the last message, 53 s after the close
    h.tick()
    assert h.state(job) is JobState.PENDING and h.s.jobs.get(job)[0].attempt == 1
