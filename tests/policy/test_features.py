"""sbatch's -C/--constraint in every policy: a job runs only on nodes whose features (labels
``NAME=true`` or a ``features`` label listing names) satisfy its expression; a gang with a
matching OR (``[a|b]``) gets nodes that all satisfy the same alternative, also in earliest-start
estimates and preemption; the submit check and ``gqueue --explain`` name the constraint."""

from __future__ import annotations

import pytest

from rota.constraint import parse_constraint
from rota.scheduler.policy import make_policy, reasons
from rota.scheduler.policy.never_fits import never_fits
from tests.policy.builders import make_job, make_node, make_running, make_snapshot, placed, plan_of

POLICIES = ["rota", "fifo-backfill", "fifo", "first-fit", "las", "sjf-oracle"]
NODES = (
    make_node("n1", 2, labels={"v100": "true", "rack1": "true"}),
    make_node("n2", 2, labels={"a100": "true", "rack1": "true"}),
    make_node("n3", 2, labels={"features": "a100,rack2"}),
    make_node("n4", 2, labels={"features": "rack2", "v100": "false"}),
)


def _job(expr: str, id: int = 1, **kw: object) -> object:
    return make_job(id, **{"gpus": 2, **kw}, constraint=parse_constraint(expr))


@pytest.mark.parametrize(
    ("expr", "nodes", "where"),
    [
        ("v100", 1, [{"n1"}]),
        ("a100&rack2", 1, [{"n3"}]),
        ("v100|rack2", 1, [{"n1", "n3", "n4"}]),
        ("a100&(rack1|rack2)", 1, [{"n2", "n3"}]),
        ("a100 & [rack1|rack2]", 1, [{"n2", "n3"}]),
        ("[rack1|rack2]", 2, [{"n1", "n2"}, {"n3", "n4"}]),
        ("a100|v100", 2, [{"n1", "n2", "n3"}]),
        ("h100", 1, None),  # no node has it
        ("v100", 2, None),  # one node has it (n4's v100 is "false")
        ("a100&[rack1|rack2]", 2, None),  # two a100 nodes, but in different racks
    ],
)
@pytest.mark.parametrize("policy", POLICIES)
def test_a_job_runs_only_where_its_features_are(expr, nodes, where, policy):
    job = _job(expr, nodes=nodes)
    plan = plan_of(make_snapshot(NODES, (job,)), policy)
    if where is None:
        assert plan.placements == ()
        if policy != "first-fit":  # first-fit names no constraint reason for anything
            assert plan.reasons[job.id] == reasons.BAD_CONSTRAINTS
        return
    got = {node for node, _ in placed(plan)[job.id]}
    assert len(got) == nodes
    assert any(got <= allowed for allowed in where)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_matching_or_gang_takes_the_rack_that_is_free(policy):
    busy = make_running(9, "n1", (0, 1))
    job = _job("[rack1|rack2]", nodes=2)
    plan = plan_of(make_snapshot(NODES, (job,), running=(busy,), now=10.0), policy)
    assert {node for node, _ in placed(plan)[job.id]} == {"n3", "n4"}


@pytest.mark.parametrize("policy", POLICIES)
def test_a_matching_or_gang_waits_rather_than_span_two_racks(policy):
    running = (make_running(8, "n1", (0, 1)), make_running(9, "n3", (0, 1)))
    job = _job("[rack1|rack2]", nodes=2)
    plan = plan_of(make_snapshot(NODES, (job,), running=running, now=10.0), policy)
    assert plan.placements == ()  # n2 and n4 are free, but in different racks
    assert plan.reasons[job.id] in (reasons.RESOURCES, reasons.PRIORITY)


@pytest.mark.parametrize("policy", ["rota", "fifo-backfill"])
def test_the_estimated_start_of_a_matching_or_gang_waits_for_one_whole_rack(policy):
    running = (
        make_running(7, "n1", (0, 1), time_limit=3600.0),
        make_running(8, "n2", (0, 1), time_limit=3 * 3600.0),
        make_running(9, "n3", (0, 1), time_limit=2 * 3600.0),
    )
    matching = _job("[rack1|rack2]", 1, nodes=2)
    plain = _job("rack1|rack2", 2, nodes=2, submit=1.0)
    for job, start in ((matching, 2 * 3600.0), (plain, 3600.0)):  # rack2 at 2h; n1+n4 at 1h
        plan = plan_of(make_snapshot(NODES, (job,), running=running), policy)
        assert plan.est_start[job.id] == pytest.approx(start)


def test_preemption_for_a_matching_or_gang_stops_the_fewest_in_one_rack():
    def low(id: int, node: str) -> object:
        return make_running(id, node, (0, 1), qos="low", preemptible=True)

    running = (low(7, "n1"), low(8, "n2"), low(9, "n3"))
    job = _job("[rack1|rack2]", nodes=2, qos="high")
    plan = plan_of(make_snapshot(NODES, (job,), running=running, now=100.0))
    assert plan.preemptions == (9,)  # rack2: n4 is free, n3's job stops; rack1 would need two


@pytest.mark.parametrize(
    ("expr", "nodes", "why"),
    [
        ("v100|a100", 1, None),
        ("[rack1|rack2]", 2, None),
        (
            "h100|b200",
            1,
            "constraint: no registered node has the features h100|b200 "
            "(features here: a100, rack1, rack2, v100)",
        ),
        (
            "a100&[rack1|rack2]",
            2,
            "constraint: a100&[rack1|rack2]: no 2 registered nodes that could hold it share one "
            "alternative of its [...] group (features here: a100, rack1, rack2, v100)",
        ),
        (
            "v100",
            2,
            "nodes: 2 nodes with 2 GPU(s), features v100 each, but only 1 node(s) have that",
        ),
    ],
)
def test_the_submit_check_names_the_constraint_no_registered_node_satisfies(expr, nodes, why):
    assert never_fits(_job(expr, nodes=nodes), NODES) == why


def test_explain_names_the_constraint_no_node_satisfies():
    job = _job("h100", 5)
    snapshot = make_snapshot(NODES, (job,))
    why = make_policy("rota", snapshot.config).explain(snapshot, 5)
    assert why.reason == reasons.BAD_CONSTRAINTS
    assert why.detail.startswith("constraint: no registered node has the features h100")


# Counts (-C "[a*2&b*1]", "a*2"): of the job's nodes, so many satisfy each counted term (each
# node counts for one term), the rest need only the plain terms; SLURM 22.05 reads them so.
@pytest.mark.parametrize(
    ("expr", "nodes", "must", "within"),
    [
        ("[a100*1&v100*1]", 2, {"n1"}, {"n1", "n2", "n3"}),
        ("a100*2", 3, {"n2", "n3"}, {"n1", "n2", "n3", "n4"}),
        ("a100*1", 1, set(), {"n2", "n3"}),
        ("[rack1*1&rack2*2]", 3, {"n3", "n4"}, {"n1", "n2", "n3", "n4"}),
        ("[a100*2&v100*1]", 3, {"n1", "n2", "n3"}, {"n1", "n2", "n3"}),
        ("[(a100|v100)*2&rack2*2]", 4, {"n1", "n2", "n3", "n4"}, {"n1", "n2", "n3", "n4"}),
        ("rack2&a100*1", 2, {"n3", "n4"}, {"n3", "n4"}),
        ("[v100*2&a100*1]", 3, None, None),  # one v100 node only
        ("[a100*2&rack2*2]", 4, None, None),  # n3 cannot count for both
    ],
)
@pytest.mark.parametrize("policy", POLICIES)
def test_counts_place_so_many_nodes_with_each_feature(expr, nodes, must, within, policy):
    job = _job(expr, nodes=nodes)
    plan = plan_of(make_snapshot(NODES, (job,)), policy)
    if must is None:
        assert plan.placements == ()
        if policy != "first-fit":
            assert plan.reasons[job.id] == reasons.BAD_CONSTRAINTS
        return
    got = {node for node, _ in placed(plan)[job.id]}
    assert len(got) == nodes
    assert must <= got <= within


@pytest.mark.parametrize("policy", POLICIES)
def test_counts_take_the_free_node_of_a_feature_or_wait_for_one(policy):
    job = _job("[a100*1&v100*1]", nodes=2)
    busy_a100 = (make_running(9, "n2", (0, 1)),)
    plan = plan_of(make_snapshot(NODES, (job,), running=busy_a100, now=10.0), policy)
    assert {node for node, _ in placed(plan)[job.id]} == {"n1", "n3"}
    busy_v100 = (make_running(9, "n1", (0, 1)),)
    plan = plan_of(make_snapshot(NODES, (job,), running=busy_v100, now=10.0), policy)
    assert plan.placements == ()  # three free nodes, but the only v100 is busy
    assert plan.reasons[job.id] in (reasons.RESOURCES, reasons.PRIORITY)


@pytest.mark.parametrize("policy", ["rota", "fifo-backfill"])
def test_the_estimated_start_of_a_counted_job_waits_for_its_counted_nodes(policy):
    running = (
        make_running(7, "n1", (0, 1), time_limit=3 * 3600.0),
        make_running(8, "n2", (0, 1), time_limit=3600.0),
        make_running(9, "n3", (0, 1), time_limit=3600.0),
    )
    counted = _job("[v100*1&a100*1]", 1, nodes=2)
    plain = _job("rack1|rack2", 2, nodes=2, submit=1.0)
    for job, start in ((counted, 3 * 3600.0), (plain, 3600.0)):  # the v100 (n1) is free at 3h
        plan = plan_of(make_snapshot(NODES, (job,), running=running), policy)
        assert plan.est_start[job.id] == pytest.approx(start)


def test_preemption_for_a_counted_job_stops_the_job_on_the_counted_node():
    def low(id: int, node: str) -> object:
        return make_running(id, node, (0, 1), qos="low", preemptible=True)

    running = (low(7, "n1"), low(8, "n2"))
    job = _job("[v100*1&rack2*1]", nodes=2, qos="high")
    plan = plan_of(make_snapshot(NODES, (job,), running=running, now=100.0))
    assert plan.preemptions == (7,)  # the only v100; rack2 has free nodes (n3, n4)


def test_a_counted_job_in_a_reservation_gets_the_reserved_nodes_that_meet_its_counts():
    from rota.scheduler.policy.snapshot import ReservationView

    booked = ReservationView(
        "lab", 0.0, 10 * 3600.0, {"n1": (0, 1), "n2": (0, 1)}, frozenset({"alice"})
    )
    job = _job("[v100*1&a100*1]", nodes=2, user="alice", reservation="lab")
    other = _job("[v100*1&a100*1]", 2, nodes=2, user="bob", submit=1.0)
    for policy in POLICIES:
        snap = make_snapshot(NODES, (job, other), now=100.0, reservations=(booked,))
        plan = make_policy(policy, snap.config).decide(snap)
        assert {node for node, _ in placed(plan)[job.id]} == {"n1", "n2"}, policy
        assert other.id not in placed(plan)  # the only v100 is booked for alice


@pytest.mark.parametrize(
    ("expr", "nodes", "why"),
    [
        ("[a100*2&v100*1]", 3, None),
        (
            "[a100*2&rack2*2]",
            4,
            "constraint: [a100*2&rack2*2]: no 4 registered nodes that could hold it meet its "
            "counts (features here: a100, rack1, rack2, v100)",
        ),
        (
            "h100*1",
            2,
            "constraint: h100*1: no 2 registered nodes that could hold it meet its counts "
            "(features here: a100, rack1, rack2, v100)",
        ),
    ],
)
def test_the_submit_check_names_counts_no_registered_nodes_meet(expr, nodes, why):
    assert never_fits(_job(expr, nodes=nodes), NODES) == why


def test_counts_use_each_node_for_one_term_and_prefer_the_earlier_nodes():
    from rota.scheduler.policy.counts import pick_counted

    def f(*names: str) -> frozenset[str]:
        return frozenset(names)

    both = parse_constraint("[a*2&b*2]")
    # n0 and n1 have both features, but a node counts once: only n0, n1 and n3 are a or b
    assert pick_counted(both, [f("a", "b"), f("a", "b"), f("c"), f("a")], 4) is None
    assert pick_counted(both, [f("a", "b"), f("a", "b"), f("c"), f("a"), f("b")], 4) is not None
    # b is scarce: the b node is kept for b, the a nodes serve a; the rest are the earliest
    got = pick_counted(parse_constraint("[a*1&b*1]"), [f("a", "b"), f("c"), f("a"), f("c")], 3)
    assert got == [0, 1, 2]
