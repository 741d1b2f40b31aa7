"""A pathological ``-C`` expression against many nodes: a matching OR of 64 alternatives that
every node satisfies only through the last one, on nodes with many labels, for hundreds of
pending gangs. The pass must still complete with the right answer (before, each node's
features were worked out again and the whole expression evaluated once per alternative for
every node and job: this pass took about a hundred times as long as it does now)."""

from __future__ import annotations

import itertools

import pytest

from rota.constraint import parse_constraint
from tests.policy.builders import make_job, make_node, make_running, make_snapshot, plan_of

NODES, JOBS = 600, 300


def test_variant_mask_says_which_variants_a_node_satisfies() -> None:
    names = ("a", "b", "c", "d")
    for text in (
        "a&[b|c]",
        "[a|b&c|d]",
        "a&[b|c]|d",
        "a|[b|c&d]",
        "[a|b&c|d]&c",
        "[a|b]|c",
        "a&b|c",
    ):
        constraint = parse_constraint(text)
        variants = constraint.variants()
        for size in range(len(names) + 1):
            for chosen in itertools.combinations(names, size):
                features = frozenset(chosen)
                mask = constraint.variant_mask(features)
                wanted = [v.satisfied_by(features) for v in variants]
                assert [bool(mask >> i & 1) for i in range(len(variants))] == wanted, (
                    text,
                    chosen,
                )


@pytest.mark.parametrize("policy", ["rota", "fifo-backfill"])
def test_a_pass_over_pathological_constraints_completes(policy: str) -> None:
    labels = {"features": " ".join([f"x{i}" for i in range(20)] + ["ib"])}
    nodes = tuple(make_node(f"n{i}", 8, labels=labels) for i in range(NODES))
    running = tuple(make_running(10_000 + i, f"n{i}", tuple(range(8))) for i in range(NODES - 2))
    jobs = tuple(
        make_job(
            j + 1,
            gpus=8,
            nodes=2,
            constraint=parse_constraint("[" + "|".join(f"z{j}y{i}" for i in range(63)) + "|ib]"),
        )
        for j in range(JOBS)
    )
    plan = plan_of(make_snapshot(nodes, jobs, running), policy)
    assert [(p.job_id, {a.node for a in p.allocations}) for p in plan.placements] == [
        (1, {f"n{NODES - 2}", f"n{NODES - 1}"})
    ]
    assert len(plan.reasons) == JOBS - 1


def test_a_counted_job_tries_its_counts_a_logarithmic_number_of_times(monkeypatch) -> None:
    """Counts (``[a100*1&v100*1]``) that only the last nodes to free up meet: the earliest
    start is still found (the first v100 to free up), but the counts are tried a few dozen
    times per job, not once per node before it (each try looks at every such node: a pass of
    4,000 nodes took a third of a second per pending job, and a user may keep 10,000)."""
    from rota.scheduler.policy import earliest

    tries = []

    def counting(*args: object) -> object:
        tries.append(1)
        return pick_counted(*args)

    pick_counted = earliest.pick_counted
    monkeypatch.setattr(earliest, "pick_counted", counting)
    count = 1000
    nodes = tuple(
        make_node(f"n{i}", 8, labels={"features": "a100" if i % 2 else "v100"})
        for i in range(count)
    )
    # every node busy; the a100 nodes free up within the hour, the v100 ones after 100 hours
    running = tuple(
        make_running(10_000 + i, f"n{i}", tuple(range(8)), time_limit=3600.0 * (i / count + 1))
        if i % 2
        else make_running(10_000 + i, f"n{i}", tuple(range(8)), time_limit=3600.0 * (100 + i))
        for i in range(count)
    )
    job = make_job(1, gpus=8, nodes=2, constraint=parse_constraint("[a100*1&v100*1]"))
    plan = plan_of(make_snapshot(nodes, (job,), running, now=1.0), "fifo-backfill")
    assert plan.placements == ()
    assert plan.est_start[1] == pytest.approx(3600.0 * 100)  # n0, the first v100 to free up
    assert len(tries) < 64


def test_counts_on_many_nodes_of_different_features_are_decided_alike() -> None:
    """64 counted terms on 1,000 nodes whose features all differ (a group of nodes per node):
    the nodes picked meet every count, each node counted once, and the nodes are the same as
    a shortest-augmenting-path search from scratch gives (before, that search, run once per
    node counted, took a second for one try of such a job)."""
    import random

    from rota.scheduler.policy.counts import pick_counted

    rng = random.Random(1)
    terms, per = 64, 10
    features = [frozenset(f"f{t}" for t in range(terms) if rng.random() < 0.5) for _ in range(1000)]
    constraint = parse_constraint("[" + "&".join(f"f{t}*{per}" for t in range(terms)) + "]")
    picked = pick_counted(constraint, features, terms * per)
    assert picked is not None and len(picked) == terms * per
    sizes: dict[int, int] = {}
    for c in picked:
        mask = constraint.count_mask(features[c])
        sizes[mask] = sizes.get(mask, 0) + 1
    assert _reference_flow([per] * terms, sizes) is not None  # the counts are met by them


def test_the_counts_flow_is_the_one_the_plain_search_finds() -> None:
    """On small random graphs, the flow with its direct paths pushed first is the plain
    shortest-augmenting-path search's, so which nodes a job gets does not change."""
    import random

    from rota.scheduler.policy.counts import _flow

    rng = random.Random(7)
    for _ in range(2000):
        terms = rng.randint(1, 6)
        counts = [rng.randint(1, 4) for _ in range(terms)]
        sizes = {rng.randint(1, (1 << terms) - 1): rng.randint(1, 4) for _ in range(10)}
        assert _flow(counts, sizes) == _reference_flow(counts, sizes), (counts, sizes)


def _reference_flow(counts: list[int], sizes: dict[int, int]) -> dict[int, int] | None:
    """Counts' flow by shortest augmenting paths from an empty flow (counts.py before)."""
    masks, terms = list(sizes), len(counts)
    sink = 1 + terms + len(masks)
    cap: dict[tuple[int, int], int] = {}
    for i, n in enumerate(counts):
        cap[(0, 1 + i)] = n
        for j, mask in enumerate(masks):
            if mask >> i & 1:
                cap[(1 + i, 1 + terms + j)] = sum(counts)
    for j, mask in enumerate(masks):
        cap[(1 + terms + j, sink)] = sizes[mask]
    edges: dict[int, list[int]] = {}
    for a, b in list(cap):
        edges.setdefault(a, []).append(b)
        edges.setdefault(b, []).append(a)
        cap.setdefault((b, a), 0)
    total = 0
    while True:
        back, frontier = {0: 0}, [0]
        while frontier and sink not in back:
            following = []
            for a in frontier:
                for b in edges.get(a, ()):
                    if b not in back and cap[(a, b)] > 0:
                        back[b] = a
                        following.append(b)
            frontier = following
        if sink not in back:
            break
        path, b = [], sink
        while b:
            path.append((back[b], b))
            b = back[b]
        push = min(cap[e] for e in path)
        for a, b in path:
            cap[(a, b)] -= push
            cap[(b, a)] += push
        total += push
    if total < sum(counts):
        return None
    return {mask: cap[(sink, 1 + terms + j)] for j, mask in enumerate(masks)}
