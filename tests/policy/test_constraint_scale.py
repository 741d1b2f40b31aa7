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
