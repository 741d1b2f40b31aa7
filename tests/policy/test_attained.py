"""Attained-service queues: order, who may preempt whom, and the safety rules around it."""

from __future__ import annotations

import pytest

from rota.scheduler.policy import make_policy
from rota.scheduler.policy.config import PolicyConfig
from tests.policy.builders import (
    HOUR,
    make_job,
    make_node,
    make_nodes,
    make_running,
    make_snapshot,
    plan_of,
)

NODES = make_nodes(1)
EIGHT = tuple(range(8))


def ckpt(id, start=0.0, **kw):
    """A checkpointable job holding the whole node since ``start``."""
    return make_running(id, "n0", EIGHT, start=start, checkpointable=True, **kw)


@pytest.mark.parametrize(
    ("running", "job", "now", "config", "victims"),
    [
        # ran 2000 s on 8 GPUs (4.4 GPU-h, queue 1): a new job of queue 0 preempts it
        ((ckpt(7),), make_job(1, 1), 2000.0, PolicyConfig(), (7,)),
        # not before min_runtime (15 min by default) ...
        ((ckpt(7),), make_job(1, 1), 600.0, PolicyConfig(), ()),
        # ... unless its QoS has a shorter one
        (
            (ckpt(7, qos="low"),),
            make_job(1, 1),
            600.0,
            PolicyConfig(min_runtime_qos={"low": 0}),
            (7,),
        ),
        # ... or a longer one for its partition (the longer of QoS and partition wins)
        (
            (ckpt(7, qos="low", partition="long"),),
            make_job(1, 1),
            2000.0,
            PolicyConfig(min_runtime_qos={"low": 0}, min_runtime_partition={"long": 3000}),
            (),
        ),
        # a job that is not checkpointable is never preempted by this rule
        ((make_running(7, "n0", EIGHT),), make_job(1, 1), 2000.0, PolicyConfig(), ()),
        # still in queue 0 (3200 GPU-s < 1 GPU-hour): nothing to preempt
        ((ckpt(7),), make_job(1, 1), 400.0, PolicyConfig(min_runtime=0), ()),
        # the hourly budget is spent (two preemptions in the last hour)
        ((ckpt(7, preempted_at=(1000.0, 1500.0)),), make_job(1, 1), 2000.0, PolicyConfig(), ()),
        # ... an older preemption does not count
        ((ckpt(7, preempted_at=(0.0, 1500.0)),), make_job(1, 1), 4000.0, PolicyConfig(), (7,)),
        # QoS keeps its meaning: a normal job does not preempt a high one
        ((ckpt(7, qos="high"),), make_job(1, 1), 2000.0, PolicyConfig(), ()),
        # the waiting job is in a queue as high as the victim's: no preemption
        (
            (ckpt(7),),
            make_job(1, 1, checkpointable=True, attained=5 * HOUR, submit=1000.0),
            2000.0,
            PolicyConfig(),
            (),
        ),
        # attained service counts earlier attempts: 40 GPU-h is queue 2, above queue 1
        (
            (ckpt(7, attained=40 * HOUR),),
            make_job(1, 1, checkpointable=True, attained=5 * HOUR, submit=1000.0),
            2000.0,
            PolicyConfig(),
            (7,),
        ),
        # no thresholds: no queues, no preemption by them
        ((ckpt(7),), make_job(1, 1), 2000.0, PolicyConfig(attained_thresholds=()), ()),
    ],
)
def test_who_preempts_whom(running, job, now, config, victims):
    plan = plan_of(make_snapshot(NODES, (job,), running, now=now, config=config))
    assert plan.preemptions == victims
    assert plan.placements == ()
    queue = 1 if job.attained else 0
    for victim in victims:
        why = plan.preempted_why[victim]
        assert why.startswith(f"preempted by job {job.id} (attained-service queue {queue})")


@pytest.mark.parametrize(
    ("pending", "now", "first"),
    [
        # a fresh job (queue 0) goes before one that already had 5 GPU-hours (queue 1)
        (
            (
                make_job(1, 1, checkpointable=True, attained=5 * HOUR, submit=0.0, qos="high"),
                make_job(2, 1, submit=100.0),
            ),
            1000.0,
            2,
        ),
        # starvation guard: waited more than 10x its 5 h of running, back to queue 0 (older)
        (
            (
                make_job(1, 1, checkpointable=True, attained=5 * HOUR, submit=0.0),
                make_job(2, 1, submit=100.0),
            ),
            60 * HOUR,
            1,
        ),
        # only checkpointable jobs are queued by attained service
        (
            (make_job(1, 1, attained=5 * HOUR, submit=0.0), make_job(2, 1, submit=100.0)),
            1000.0,
            1,
        ),
    ],
)
def test_order_by_attained_queue(pending, now, first):
    snapshot = make_snapshot(NODES, pending, now=now)
    assert make_policy("rota").order(snapshot)[0].id == first


def test_las_preempts_at_once_and_ignores_qos():
    """The ``las`` reference has no min_runtime, budget or QoS check."""
    running = (ckpt(7, qos="high", preempted_at=(100.0, 200.0, 300.0)),)
    plan = plan_of(make_snapshot(NODES, (make_job(1, 1),), running, now=500.0), "las")
    assert plan.preemptions == (7,)


def test_las_holds_no_reservation():
    """A blocked job that cannot preempt holds nothing back: a later job starts."""
    running = (make_running(7, "n0", (0, 1, 2, 3, 4, 5), time_limit=10 * HOUR),)
    pending = (make_job(1, 8, submit=0.0), make_job(2, 2, submit=10.0, time_limit=100 * HOUR))
    snapshot = make_snapshot(NODES, pending, running, now=100.0)
    assert [p.job_id for p in plan_of(snapshot, "las").placements] == [2]
    assert plan_of(snapshot, "fifo-backfill").placements == ()


def test_easy_reserves_for_the_first_blocked_job_only():
    nodes = (make_node("n0", 4), make_node("n1", 4))
    running = (
        make_running(7, "n0", (0, 1, 2, 3), time_limit=HOUR),
        make_running(8, "n1", (0, 1), time_limit=10 * HOUR),
    )
    pending = (
        make_job(1, 4, submit=0.0, time_limit=100 * HOUR),  # n0 at 1 h
        make_job(2, 4, submit=1.0, time_limit=HOUR),  # n1 at 10 h
        make_job(3, 2, submit=2.0, time_limit=20 * HOUR),  # fits n1 now, delays job 2
    )
    snapshot = make_snapshot(nodes, pending, running, now=0.0)
    assert [p.job_id for p in plan_of(snapshot, "easy").placements] == [3]
    assert plan_of(snapshot, "fifo-backfill").placements == ()


def test_explain_names_the_queue():
    snapshot = make_snapshot(
        NODES,
        (make_job(1, 8, checkpointable=True, attained=5 * HOUR),),
        (make_running(7, "n0", EIGHT),),
        now=100.0,
    )
    text = make_policy("rota").explain(snapshot, 1).attained
    assert "queue 1 of 3" in text and "5.00 GPU-hours" in text
    assert "job 7 is not checkpointable" in text
