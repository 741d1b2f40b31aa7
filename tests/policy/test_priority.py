"""Multifactor priority, decayed usage and explain()."""

from __future__ import annotations

import math

import pytest

from rota.scheduler.policy import make_policy, reasons
from rota.scheduler.policy.base import Policy
from rota.scheduler.policy.config import DAY, HOUR, PolicyConfig, Weights
from rota.scheduler.policy.priority import PriorityContext, expected_runtime
from rota.scheduler.policy.usage import Usage, UsageLedger, accrued, decay
from tests.policy.builders import make_job, make_nodes, make_running, make_snapshot

NODES = make_nodes(1)


def order_ids(jobs, policy: Policy | None = None, **kw):
    rota = policy or make_policy("rota")
    return [j.id for j in rota.order(make_snapshot(NODES, tuple(jobs), **kw))]


def only(**weights):
    return PolicyConfig(weights=Weights(**{n: 0.0 for n in Weights.__slots__} | weights))


@pytest.mark.parametrize(
    ("config", "jobs", "usage", "expected"),
    [
        # age: older first
        (only(age=1), [make_job(1, submit=500), make_job(2, submit=0)], Usage(), [2, 1]),
        # qos: high first
        (
            only(qos=1),
            [make_job(1), make_job(2, qos="high"), make_job(3, qos="low")],
            Usage(),
            [2, 1, 3],
        ),
        # size: small first
        (only(size=1), [make_job(1, 4), make_job(2, 1)], Usage(), [2, 1]),
        # service: shorter expected GPU-time first
        (
            only(service=1),
            [make_job(1, time_limit=DAY), make_job(2, time_limit=HOUR)],
            Usage(),
            [2, 1],
        ),
        # fair share: the account that used less goes first
        (
            only(fairshare_account=1),
            [make_job(1, account="heavy"), make_job(2, account="light")],
            Usage(account={"heavy": 900.0, "light": 100.0}),
            [2, 1],
        ),
        (
            only(fairshare_user=1),
            [make_job(1, user="heavy"), make_job(2, user="light")],
            Usage(user={"heavy": 900.0, "light": 100.0}),
            [2, 1],
        ),
        # job priority is added unscaled
        (only(job_priority=1), [make_job(1), make_job(2, priority=5)], Usage(), [2, 1]),
        # ties: submission time, then id
        (
            only(),
            [make_job(3, submit=1), make_job(2, submit=1), make_job(1, submit=2)],
            Usage(),
            [2, 3, 1],
        ),
    ],
)
def test_each_factor_orders(config, jobs, usage, expected):
    assert order_ids(jobs, config=config, usage=usage, now=1000.0) == expected


def test_account_shares_entitle_more_usage():
    cfg = only(fairshare_account=1)
    cfg = PolicyConfig(weights=cfg.weights, account_shares={"big": 9.0, "small": 1.0})
    usage = Usage(account={"big": 800.0, "small": 200.0})
    ctx = PriorityContext(make_snapshot(NODES, (), config=cfg, usage=usage))
    assert ctx.account_fs["big"] > ctx.account_fs["small"]
    assert ctx.account_fs["big"] == pytest.approx(2 ** (-0.8 / 0.9))


@pytest.mark.parametrize(
    ("job", "usage", "expected"),
    [
        (make_job(time_limit=10 * HOUR), Usage(), 5 * HOUR),
        (make_job(time_limit=10 * HOUR), Usage(limit_ratio_user={"alice": 0.1}), HOUR),
        (make_job(time_limit=0, default_limit=True), Usage(runtime_user={"alice": 600.0}), 600.0),
        (make_job(time_limit=0, default_limit=True), Usage(runtime_account={"lab": 60.0}), 60.0),
        (make_job(time_limit=0, default_limit=True), Usage(), 7 * DAY),
    ],
)
def test_expected_runtime(job, usage, expected):
    assert expected_runtime(job, PolicyConfig(), usage) == pytest.approx(expected)


def test_decay_and_accrual():
    assert decay(100.0, 7 * DAY, 7 * DAY) == pytest.approx(50.0)
    # one GPU for one half-life accrues half-life / ln 2 * (1 - 1/2)
    assert accrued(1.0, DAY, DAY) == pytest.approx(DAY / math.log(2) / 2)
    assert accrued(2.0, 1.0, 1e9) == pytest.approx(2.0)


def test_ledger_tracks_running_gpus_and_history():
    ledger = UsageLedger(half_life=1e9)  # no decay: plain GPU-seconds
    ledger.start("u", "a", 4, now=0.0)
    ledger.start("v", "a", 1, now=10.0)
    ledger.stop("u", "a", 4, now=100.0)
    view = ledger.view(200.0)
    assert view.user["u"] == pytest.approx(400.0)
    assert view.user["v"] == pytest.approx(190.0)
    assert view.account["a"] == pytest.approx(590.0)
    ledger.finish("u", "a", run_time=100.0, time_limit=1000.0, user_limit=True)
    ledger.finish("u", "a", run_time=100.0, time_limit=1000.0, user_limit=True)
    later = ledger.view(300.0)
    assert later.limit_ratio_user["u"] == pytest.approx(0.1)
    assert later.runtime_account["a"] == pytest.approx(100.0)
    assert later.version > view.version


def test_explain_breaks_priority_down_and_names_the_reason():
    running = (make_running(9, "n0", tuple(range(8))),)
    jobs = (make_job(1, 2, submit=0, qos="high"), make_job(2, 1, submit=10))
    snap = make_snapshot(NODES, jobs, running, now=600.0)
    rota = make_policy("rota")
    why = rota.explain(snap, 2)
    assert why.reason == reasons.PRIORITY
    assert why.rank == 2
    assert not why.starts_now
    names = [f.name for f in why.factors]
    assert names == [
        "age",
        "fairshare_account",
        "fairshare_user",
        "qos",
        "size",
        "service",
        "job_priority",
        "partition_tier",
    ]
    assert why.priority == pytest.approx(sum(f.value * f.weight for f in why.factors))
    head = rota.explain(snap, 1)
    assert head.reason == reasons.RESOURCES and head.rank == 1
    assert head.est_start == pytest.approx(3600.0)
    with pytest.raises(KeyError):
        rota.explain(snap, 99)


def test_explain_of_a_job_that_starts():
    why = make_policy("fifo-backfill").explain(make_snapshot(NODES, (make_job(1, 1),)), 1)
    assert why.starts_now and why.reason is None and why.rank == 1


def test_cached_order_matches_fresh_order():
    jobs = [make_job(i, 1 + i % 4, submit=i * 7.0, account=f"a{i % 3}") for i in range(1, 40)]
    usage = Usage(as_of=100.0, version=3, account={"a0": 50.0, "a1": 10.0})
    rota = make_policy("rota")
    first = order_ids(jobs, rota, usage=usage, now=120.0)
    again = order_ids(jobs[5:], rota, usage=usage, now=130.0)  # same period: cache reused
    assert again == [i for i in first if i > 5]
    fresh = order_ids(
        list(reversed(jobs)),
        rota,
        usage=Usage(as_of=100.0, version=4, account=usage.account),
        now=130.0,
    )
    assert fresh == first
