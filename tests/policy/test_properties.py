"""Hypothesis properties of every policy's plan."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rota.scheduler.policy import POLICIES, reasons
from rota.scheduler.policy.config import Limits, PolicyConfig
from rota.scheduler.policy.snapshot import Allocation, GpuView, NodeView, Plan, RunningJob, Snapshot
from tests.policy.builders import HOUR, make_job, make_snapshot, plan_of

LIMITS = [HOUR / 2, HOUR, 2 * HOUR, 5 * HOUR]
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def snapshots(draw, limits: bool = True, blocked: bool = True) -> Snapshot:
    nodes = []
    for i in range(draw(st.integers(1, 4))):
        count = draw(st.integers(1, 8))
        gpus = tuple(
            GpuView(g, "A100" if i % 2 else "V100", allocatable=draw(st.booleans()) or g > 0)
            for g in range(count)
        )
        nodes.append(NodeView(f"n{i}", gpus, schedulable=draw(st.integers(0, 5)) > 0))
    running = []
    rid = 1000
    for node in nodes:
        free = [g.index for g in node.gpus if g.allocatable]
        while free and draw(st.booleans()):
            take = free[: draw(st.integers(1, len(free)))]
            free = free[len(take) :]
            rid += 1
            running.append(
                RunningJob(
                    rid,
                    draw(st.sampled_from("uvw")),
                    draw(st.sampled_from("ab")),
                    (Allocation(node.name, tuple(take)),),
                    start_time=draw(st.floats(0, 100)),
                    time_limit=draw(st.sampled_from(LIMITS)),
                    qos=draw(st.sampled_from(["low", "", "high"])),
                    preemptible=draw(st.booleans()),
                )
            )
    pending = []
    for i in range(1, draw(st.integers(0, 14)) + 1):
        pending.append(
            make_job(
                i,
                draw(st.integers(0, 8)),
                nodes=draw(st.sampled_from([1, 1, 1, 2])),
                user=draw(st.sampled_from("uvw")),
                account=draw(st.sampled_from("ab")),
                submit=draw(st.floats(0, 100)),
                time_limit=draw(st.sampled_from(LIMITS)),
                qos=draw(st.sampled_from(["low", "", "high"])),
                gpu_type=draw(st.sampled_from(["", "", "", "A100"])),
                exclusive=draw(st.integers(0, 9)) == 0,
                blocked=draw(st.sampled_from([None] * 6 + [reasons.HELD_USER]))
                if blocked
                else None,
            )
        )
    limit_cfg = Limits()
    if limits and draw(st.booleans()):
        limit_cfg = Limits(
            max_gpus_per_user=draw(st.integers(1, 12)),
            max_gpus_per_account=draw(st.integers(1, 16)),
            max_pending_per_user=draw(st.integers(1, 5)),
        )
    cfg = PolicyConfig(limits=limit_cfg, backfill_depth=draw(st.integers(0, 4)))
    return make_snapshot(tuple(nodes), tuple(pending), tuple(running), now=100.0, config=cfg)


def used_gpus(snap: Snapshot, plan: Plan) -> Counter[tuple[str, int]]:
    held: Counter[tuple[str, int]] = Counter()
    for job in snap.running:
        for a in job.allocations:
            held.update((a.node, g) for g in a.gpu_indices)
    for p in plan.placements:
        for a in p.allocations:
            held.update((a.node, g) for g in a.gpu_indices)
    return held


@given(snapshots(), st.sampled_from(sorted(POLICIES)))
@SETTINGS
def test_no_gpu_twice_and_every_job_accounted_for(snap, policy):
    plan = plan_of(snap, policy)
    assert max(used_gpus(snap, plan).values(), default=1) == 1
    nodes = {n.name: n for n in snap.nodes}
    jobs = {j.id: j for j in snap.pending}
    placed_ids = [p.job_id for p in plan.placements]
    assert len(placed_ids) == len(set(placed_ids))
    for p in plan.placements:
        job = jobs[p.job_id]
        assert job.blocked is None
        assert len({a.node for a in p.allocations}) == job.nodes == len(p.allocations)
        for a in p.allocations:
            node = nodes[a.node]
            assert node.schedulable
            usable = {g.index for g in node.gpus if g.allocatable}
            assert set(a.gpu_indices) <= usable and len(a.gpu_indices) == job.gpus
    # placed + waiting with a reason = submitted, and never both
    assert set(placed_ids) | set(plan.reasons) == set(jobs)
    assert not set(placed_ids) & set(plan.reasons)
    for job in snap.pending:
        if job.blocked is not None:
            assert plan.reasons[job.id] == job.blocked


@given(snapshots(blocked=False), st.sampled_from(["rota", "fifo", "fifo-backfill", "sjf-oracle"]))
@SETTINGS
def test_limits_never_exceeded(snap, policy):
    limits = snap.config.limits
    plan = plan_of(snap, policy)
    jobs = {j.id: j for j in snap.pending}
    user: Counter[str] = Counter()
    account: Counter[str] = Counter()
    for job in snap.running:
        n = sum(len(a.gpu_indices) for a in job.allocations)
        user[job.user] += n
        account[job.account] += n
    before_user, before_account = Counter(user), Counter(account)
    for p in plan.placements:
        job = jobs[p.job_id]
        user[job.user] += job.gpus * job.nodes
        account[job.account] += job.gpus * job.nodes
    for name, cap, counts, before in (
        ("user", limits.max_gpus_per_user, user, before_user),
        ("account", limits.max_gpus_per_account, account, before_account),
    ):
        if cap is not None:
            for key, value in counts.items():
                assert value <= max(cap, before[key]), name
    if limits.max_pending_per_user is not None:
        started = Counter(jobs[p.job_id].user for p in plan.placements)
        assert all(v <= limits.max_pending_per_user for v in started.values())


@given(
    snapshots(limits=False, blocked=False), st.sampled_from(["rota", "fifo-backfill", "sjf-oracle"])
)
@SETTINGS
def test_backfill_never_delays_the_top_job(snap, policy):
    plan = plan_of(snap, policy)
    waiting = [j for j in snap.pending if plan.reasons.get(j.id) == reasons.RESOURCES]
    if not waiting or waiting[0].id not in plan.est_start or snap.config.backfill_depth == 0:
        return
    top = waiting[0]
    # The same pass once the placed jobs run: the top job must not start any later.
    placed = {p.job_id: p for p in plan.placements}
    running = snap.running + tuple(
        RunningJob(
            j.id,
            j.user,
            j.account,
            placed[j.id].allocations,
            snap.now,
            j.time_limit,
            exclusive=j.exclusive,
            true_duration=j.true_duration,
        )
        for j in snap.pending
        if j.id in placed
    )
    pending = tuple(j for j in snap.pending if j.id not in placed)
    again = plan_of(Snapshot(snap.now, snap.nodes, pending, running, config=snap.config), policy)
    if any(p.job_id == top.id for p in again.placements):
        return
    assert again.est_start[top.id] <= plan.est_start[top.id] + 1e-6


@given(snapshots(limits=False, blocked=False), st.sampled_from(sorted(POLICIES)))
@SETTINGS
def test_idle_gpus_only_for_reservations(snap, policy):
    """A job left waiting that fits the leftovers may only wait for a reservation ahead."""
    plan = plan_of(snap, policy)
    jobs = {j.id: j for j in snap.pending}
    held = used_gpus(snap, plan)
    allocations = [a for j in snap.running for a in j.allocations]
    allocations += [a for p in plan.placements for a in p.allocations]
    busy_nodes = {a.node for a in allocations}
    exclusive = {a.node for p in plan.placements for a in p.allocations if jobs[p.job_id].exclusive}
    free = {
        n.name: [g for g in n.gpus if g.allocatable and (n.name, g.index) not in held]
        for n in snap.nodes
        if n.schedulable and n.name not in exclusive
    }
    for job in snap.pending:
        if plan.reasons.get(job.id) not in (reasons.RESOURCES, reasons.PRIORITY):
            continue
        fits = [
            name
            for name, gpus in free.items()
            if len([g for g in gpus if job.gpu_type in g.name]) >= job.gpus
            and not (job.exclusive and (name in busy_nodes or len(gpus) < job.gpus))
        ]
        if len(fits) < job.nodes:
            continue
        # it fits now: it may only wait if it would run into another job's reserved start
        # (fifo: behind a blocked job ahead of it; first-fit never leaves one waiting)
        placed_ids = {p.job_id for p in plan.placements}
        end = snap.now + snap.config.limit_of(job.time_limit)
        if policy == "fifo":
            assert any(
                reason == reasons.RESOURCES and other != job.id
                for other, reason in plan.reasons.items()
            ), job
        else:
            assert policy != "first-fit", job
            assert any(
                other != job.id and other not in placed_ids and start < end
                for other, start in plan.est_start.items()
            ), job
