"""Issue 25 item 6: grun sessions (``interactive``) are not preempted while they run within
their limits (neither by a higher QoS nor by attained service), and they may borrow the idle
GPUs a reservation lends, but only as preemptible work: its owners' jobs take them back."""

from __future__ import annotations

from rota.scheduler.policy import make_policy, reasons
from rota.scheduler.policy.config import PolicyConfig
from tests.policy.builders import (
    make_job,
    make_nodes,
    make_running,
    make_snapshot,
    placed,
    plan_of,
)
from tests.policy.test_reservations import NOW, decide, resv

EIGHT = tuple(range(8))


def test_a_session_is_not_preempted_by_a_higher_qos_though_flagged_preemptible():
    batch = make_running(7, "n0", EIGHT, qos="low", preemptible=True)
    session = make_running(7, "n0", EIGHT, qos="low", preemptible=True, interactive=True)
    high = make_job(1, 8, qos="high")
    assert plan_of(make_snapshot(make_nodes(1), (high,), (batch,), now=100.0)).preemptions == (7,)
    plan = plan_of(make_snapshot(make_nodes(1), (high,), (session,), now=100.0))
    assert plan.preemptions == () and plan.placements == ()


def test_a_session_is_not_preempted_by_attained_service():
    def holder(**kw):
        return make_running(7, "n0", EIGHT, checkpointable=True, **kw)

    def victims(running):
        snap = make_snapshot(make_nodes(1), (make_job(1, 1),), (running,), now=2000.0)
        return make_policy("rota", PolicyConfig()).decide(snap).preemptions

    assert victims(holder()) == (7,)
    assert victims(holder(interactive=True)) == ()


def test_a_session_borrows_lent_reserved_gpus_and_a_plain_batch_job_does_not():
    r = resv(gpus=EIGHT)
    jobs = [make_job(1, 2, user="bob", interactive=True), make_job(2, 2, user="carol")]
    plan = decide(r, pending=jobs)
    assert 1 in placed(plan) and 2 not in placed(plan)
    assert plan.reasons[2] == reasons.REQ_NODE_NOT_AVAIL
    assert decide(resv(gpus=EIGHT, lend=False), pending=jobs[:1]).placements == ()


def test_a_session_on_lent_gpus_is_preempted_when_the_owners_job_arrives():
    r = resv(gpus=EIGHT)
    session = make_running(50, gpus=EIGHT, user="bob", interactive=True, start=NOW - 60)
    plan = decide(r, pending=[make_job(1, 4, reservation="lab-a")], running=[session])
    assert plan.preemptions == (50,)
