"""The caches kept between passes (queue order, cluster state) never change a plan.

Every pass of a run is planned twice: by the policy with its caches warm from the previous
passes and bulk reasons on, and by the same policy with fresh, empty caches and every job
examined one by one. The plans must be equal.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest

from rota.scheduler.policy import backfill, make_policy
from rota.scheduler.policy.config import HOUR, PolicyConfig
from rota.scheduler.policy.snapshot import (
    Allocation,
    GpuView,
    NodeView,
    PendingDelta,
    PendingJob,
    Plan,
    RunningJob,
    Snapshot,
)
from rota.scheduler.policy.state import ClusterState
from rota.scheduler.policy.state_cache import StateCache
from rota.scheduler.sim import simulate
from rota.scheduler.sim.trace import derive_limits
from tests.policy.test_simulator import generated_jobs

POLICIES = ["rota", "fifo", "fifo-backfill", "sjf-oracle"]


BULK_CALLS: list[int] = []
_original_bulk = backfill.bulk_reasons


def _counted_bulk(*args):  # type: ignore[no-untyped-def]
    BULK_CALLS.append(1)
    return _original_bulk(*args)


@pytest.fixture(autouse=True)
def count_bulk(monkeypatch):
    monkeypatch.setattr(backfill, "bulk_reasons", _counted_bulk)


@contextmanager
def no_bulk() -> Iterator[None]:
    """Turn bulk reasons off (every job examined one by one), and back on."""
    bulk = backfill.bulk_reasons
    backfill.bulk_reasons = lambda *args: None
    try:
        yield
    finally:
        backfill.bulk_reasons = bulk


class Checked:
    """Policy ``name`` whose every plan is checked against the plan of a new instance of it
    (empty caches) with bulk reasons off."""

    def __init__(self, name: str, seen: list[int]) -> None:
        self.policy = make_policy(name)
        self.seen = seen
        self.name = name
        self.config = self.policy.config
        self.reads_true_durations = self.policy.reads_true_durations
        self.order = self.policy.order
        self.explain = self.policy.explain

    def decide(self, snapshot: Snapshot) -> Plan:
        plan = self.policy.decide(snapshot)
        with no_bulk():
            again = make_policy(self.name, snapshot.config).decide(snapshot)
        assert plan == again
        self.seen.append(len(plan.placements))
        return plan


def checked(policy: str, seen: list[int]):
    return Checked(policy, seen).decide


@pytest.mark.parametrize("policy", POLICIES)
def test_cached_passes_equal_fresh_ones_in_a_simulation(policy):
    jobs = derive_limits(generated_jobs(250, seed=3), seed=1)
    seen: list[int] = []
    simulate(jobs, Checked(policy, seen), nodes=3, gpus_per_node=4)
    assert sum(seen) >= 200  # every job that fits the cluster ran


def _daemon_run(policy: str, seed: int, steps: int = 60) -> None:
    """Passes as a daemon makes them: full reasons, time moves, some plans applied, jobs end,
    new submissions, a node drains, views re-created (equal, not identical)."""
    rng = random.Random(seed)
    nodes = tuple(
        NodeView(f"n{i}", tuple(GpuView(g, "A100" if i % 3 else "V100") for g in range(8)))
        for i in range(6)
    )
    cfg = PolicyConfig(backfill_depth=rng.choice([1, 4, 16]))
    pending: dict[int, PendingJob] = {}
    running: dict[int, RunningJob] = {}
    now, next_id = 0.0, 1
    decide = checked(policy, [])
    for version in range(1, steps + 1):
        for _ in range(rng.randrange(0, 6)):
            pending[next_id] = PendingJob(
                next_id,
                f"u{rng.randrange(4)}",
                f"a{rng.randrange(2)}",
                now,
                rng.choice([0.5, 1, 2, 8]) * HOUR,
                gpus=rng.choice([1, 1, 2, 4, 8]),
                nodes=rng.choice([1, 1, 1, 2]),
                gpu_type=rng.choice(["", "", "A100"]),
                qos=rng.choice(["", "low", "high"]),
                preemptible=rng.random() < 0.3,
                true_duration=rng.uniform(0.1, 2) * HOUR,
            )
            next_id += 1
        for job_id in list(running):
            if rng.random() < 0.15:
                del running[job_id]
            elif rng.random() < 0.05:
                running[job_id] = replace(running[job_id], stopping=True)
        if rng.random() < 0.1:  # re-created views: equal, not the same objects
            nodes = tuple(replace(n) for n in nodes)
        if rng.random() < 0.05:
            nodes = tuple(replace(n, schedulable=rng.random() < 0.8) for n in nodes)
        if rng.random() < 0.3:  # one node changes: a GPU turns unusable or usable, or it drains
            nodes = _one_node_changed(nodes, rng)
        snap = Snapshot(
            now, nodes, tuple(pending.values()), tuple(running.values()), version, config=cfg
        )
        plan = decide(snap)
        if rng.random() < 0.7:  # apply the plan
            for p in plan.placements:
                job = pending.pop(p.job_id)
                running[job.id] = RunningJob(
                    job.id,
                    job.user,
                    job.account,
                    p.allocations,
                    now,
                    job.time_limit,
                    qos=job.qos,
                    preemptible=job.preemptible,
                    true_duration=job.true_duration,
                )
            for job_id in plan.preemptions:
                running[job_id] = replace(running[job_id], stopping=True)
        now += rng.choice([0.0, 1.0, 60.0, 400.0])


def _one_node_changed(nodes: tuple[NodeView, ...], rng: random.Random) -> tuple[NodeView, ...]:
    i = rng.randrange(len(nodes))
    node = nodes[i]
    if rng.random() < 0.6:
        g = rng.randrange(len(node.gpus))
        gpus = tuple(
            replace(x, allocatable=not x.allocatable) if x.index == g else x for x in node.gpus
        )
        node = replace(node, gpus=gpus)
    else:
        node = replace(node, schedulable=not node.schedulable)
    return (*nodes[:i], node, *nodes[i + 1 :])


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(6))
def test_cached_passes_equal_fresh_ones_as_the_daemon_runs_them(policy, seed):
    _daemon_run(policy, seed)


def test_bulk_reasons_were_exercised():
    before = len(BULK_CALLS)
    for seed in range(3):
        _daemon_run("rota", seed)
    assert len(BULK_CALLS) > before


def test_a_wrong_delta_is_noticed():
    nodes = (NodeView("n0", tuple(GpuView(g) for g in range(2))),)
    jobs = tuple(PendingJob(i, "u", "a", float(i), HOUR, gpus=4) for i in range(1, 4))
    decide = make_policy("fifo-backfill").decide
    with no_bulk():
        decide(Snapshot(0.0, nodes, jobs[:2], (), version=1))
        # claims nothing changed, but job 3 came: the counts disagree, so the cache looks
        plan = decide(Snapshot(0.0, nodes, jobs, (), version=2, delta=PendingDelta(1)))
    assert set(plan.reasons) == {1, 2, 3}


def test_running_jobs_sharing_a_gpu_fall_back_to_a_rebuild():
    nodes = (NodeView("n0", tuple(GpuView(g) for g in range(4))),)
    job = PendingJob(1, "u", "a", 0.0, HOUR, gpus=2)
    a = RunningJob(10, "u", "a", (Allocation("n0", (0, 1)),), 0.0, HOUR)
    b = RunningJob(11, "u", "a", (Allocation("n0", (1, 2)),), 0.0, HOUR)  # overlaps a
    decide = checked("rota", [])
    decide(Snapshot(0.0, nodes, (job,), (a,), 1))
    decide(Snapshot(0.0, nodes, (job,), (a, b), 2))
    decide(Snapshot(0.0, nodes, (job,), (b,), 3))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(4))
def test_resumed_passes_equal_fresh_ones(policy, seed):
    """Submissions one at a time at one instant, plans not applied: passes resume."""
    rng = random.Random(seed)
    nodes = tuple(
        NodeView(f"n{i}", tuple(GpuView(g, "A100" if i % 2 else "V100") for g in range(4)))
        for i in range(4)
    )
    running = tuple(
        RunningJob(
            100 + i,
            "r",
            "a",
            (Allocation(f"n{i}", tuple(range(rng.randrange(1, 5)))),),
            0.0,
            rng.choice([1, 3]) * HOUR,
            qos="low",
            preemptible=rng.random() < 0.3,
        )
        for i in range(3)
    )
    cfg = PolicyConfig(backfill_depth=rng.choice([0, 1, 2, 16]))
    decide = checked(policy, [])
    pending: list[PendingJob] = []
    for i in range(1, 40):
        pending.append(
            PendingJob(
                i,
                f"u{rng.randrange(3)}",
                "a",
                rng.uniform(0, 50),
                rng.choice([0.25, 1, 2, 4]) * HOUR,
                gpus=rng.choice([0, 1, 1, 2, 4]),
                nodes=rng.choice([1, 1, 2]),
                gpu_type=rng.choice(["", "", "A100"]),
                qos=rng.choice(["", "high"]),
                blocked=rng.choice([None] * 8 + ["JobHeldUser"]),
                true_duration=rng.uniform(0.1, 2) * HOUR,
            )
        )
        decide(Snapshot(100.0, nodes, tuple(pending), running, i, config=cfg))


def test_passes_from_two_threads_do_not_mix_caches():
    """One instance called from two threads at once: its own lock keeps its caches whole."""
    from concurrent.futures import ThreadPoolExecutor

    nodes = tuple(NodeView(f"n{i}", tuple(GpuView(g) for g in range(8))) for i in range(8))
    snaps = []
    for k in range(2):
        jobs = tuple(
            PendingJob(i, "u", "a", float(i), (1 + (i * 7 + k) % 5) * HOUR, gpus=1 + (i + k) % 4)
            for i in range(1, 200)
        )
        snaps.append(Snapshot(float(k), nodes, jobs, (), k + 1))
    for policy in POLICIES:
        with no_bulk():
            expected = [make_policy(policy).decide(s) for s in snaps]
        decide = make_policy(policy).decide
        with ThreadPoolExecutor(2) as pool:
            for _ in range(20):
                got = list(pool.map(decide, snaps))
                assert got == expected


def test_a_changed_node_is_replaced_in_the_kept_state_not_rebuilt():
    """A GPU of one node turns unusable (dirty after a job) and another node drains: the kept
    state takes both in place and equals a state built from scratch."""
    nodes = tuple(NodeView(f"n{i}", tuple(GpuView(g) for g in range(4))) for i in range(6))
    running = (
        RunningJob(1, "u", "a", (Allocation("n1", (0, 1)),), 0.0, HOUR),
        RunningJob(2, "u", "a", (Allocation("n1", (2,)), Allocation("n2", (0,))), 0.0, 2 * HOUR),
        RunningJob(3, "u", "a", (Allocation("n4", (3,), cpus=2.0),), 0.0, 3 * HOUR),
    )
    cache = StateCache()
    end = lambda job: job.start_time + job.time_limit  # noqa: E731
    first = cache.acquire(nodes, running, 10.0, None, end)
    cache.release(first)
    unusable = tuple(replace(g, allocatable=g.index != 3) for g in nodes[1].gpus)
    changed = (nodes[0], replace(nodes[1], gpus=unusable), nodes[2], nodes[3])
    changed += (replace(nodes[4], schedulable=False), nodes[5])
    again = cache.acquire(changed, running, 20.0, None, end)
    fresh = ClusterState(changed, running, 20.0, end)

    assert again is first  # kept, not rebuilt
    assert again.nodes[1].view is changed[1] and again.by_name["n4"].view is changed[4]
    assert again.buckets == fresh.buckets and again.total_free == fresh.total_free
    for kept, new in zip(again.nodes, fresh.nodes, strict=True):
        assert kept.save() == new.save() and kept.holders == new.holders
        assert (kept.cpus, kept.stopping, kept.total) == (new.cpus, new.stopping, new.total)
