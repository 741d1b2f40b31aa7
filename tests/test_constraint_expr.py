"""The -C/--constraint expression: what it means on a node's labels, and the scheduler's check
of the job file's ``constraint`` (a clear error naming the field, hostile input refused)."""

from __future__ import annotations

import pytest

from rota.constraint import ConstraintError, node_features, parse_constraint
from rota.inputs import SpecError
from rota.jobspec import JobSpec, parse_job_file
from rota.validate import CLIENT_RULES, check_spec

V100 = {"v100": "true", "rack": "r1"}
LISTED = {"features": "a100, ib rack2"}


@pytest.mark.parametrize(
    ("expr", "labels", "matches"),
    [
        ("v100", V100, True),
        ("a100", V100, False),
        ("a100&ib", LISTED, True),
        ("a100&ib&rack1", LISTED, False),
        ("v100|a100", V100, True),
        ("v100|a100", LISTED, True),
        ("v100|a100", {"v100": "yes"}, False),  # only "true" gives a feature
        ("a100&(rack1|rack2)", LISTED, True),
        ("a100|v100&rack9", LISTED, True),  # & binds tighter than |
        ("(a100|v100)&rack9", LISTED, False),
        ("[rack1|rack2]", LISTED, True),  # one node: a matching OR is an OR
        ("ib&[rack1|rack2]", LISTED, True),
    ],
)
def test_an_expression_matches_the_features_a_nodes_labels_give(expr, labels, matches):
    assert parse_constraint(expr).matches(labels) is matches


def test_node_features_are_true_labels_and_the_features_list():
    assert node_features({**V100, **LISTED}) == {"v100", "a100", "ib", "rack2"}


def test_a_matching_or_has_one_variant_per_alternative():
    c = parse_constraint(" ib & [ rack1 | (rack2&fast) ] ")
    assert c.text == "ib&[rack1|(rack2&fast)]" and c.matching
    variants = c.variants()
    assert [v.text for v in variants] == ["ib&rack1", "ib&rack2&fast"]
    assert not any(v.matching for v in variants)
    assert variants[0].matches({"ib": "true", "rack1": "true"})
    assert not variants[0].matches({"ib": "true", "rack2": "true", "fast": "true"})
    assert variants[1].matches({"ib": "true", "rack2": "true", "fast": "true"})
    assert parse_constraint("a|b").variants() == (parse_constraint("a|b"),)


@pytest.mark.parametrize(
    ("expr", "problem"),
    [
        ("", "is empty"),
        ("a&", "ends too early"),
        ("a||b", "unexpected '|'"),
        ("(a|b", "missing ')'"),
        ("[a|b", "missing ']'"),
        ("a)", "unexpected ')'"),
        ("a b", "unexpected 'b'"),
        ("a*0", "count *0: a count is 1 to 100000 nodes"),
        ("a*", "unexpected '*'; a count is * and a number (a*2)"),
        ("a*2*3", "unexpected '*3'"),
        ("[a*1|b*1]", "a [...] group with counts has no |"),
        ("[a*1&b]", "every &-joined term of a [...] group needs a count"),
        ("(a*2|b)", "a count inside | or parentheses"),
        ("[r1|r2]&a*1", "counts cannot be combined with a matching OR [a|b]"),
        ("a,b", "unexpected ','"),
        ("a;rm -rf /", "unexpected ';'"),
        ("$(reboot)", "unexpected '$'"),
        ("gpu\u202e", "unexpected '\\u202e'"),
        ("-a", "unexpected '-'"),
        ("[a|b]&[c|d]", "only one [...] group"),
        ("(a&[b|c])", "only one [...] group is allowed, and not inside another"),
        ("(" * 9 + "a" + ")" * 9, "more than 8 nested groups"),
        ("(" * 5000 + "a" + ")" * 5000, "at most 1024 are allowed"),
        ("&".join(["a"] * 65), "more than 64 feature names"),
        ("x" * 64, "is 64 characters; at most 63"),
    ],
)
def test_bad_expressions_are_refused_saying_what_is_wrong(expr, problem):
    with pytest.raises(ConstraintError) as err:
        parse_constraint(expr)
    assert problem in str(err.value)


def test_the_spec_check_names_the_field_and_the_allowed_syntax():
    check_spec(JobSpec(image="x", command=("true",), constraint="a100&(ib|roce)"), CLIENT_RULES)
    with pytest.raises(SpecError) as err:
        check_spec(JobSpec(image="x", command=("true",), constraint="a100&&ib"), CLIENT_RULES)
    text = str(err.value)
    assert text.startswith("constraint: 'a100&&ib': unexpected '&'")
    assert "feature names joined by & (and), | (or)" in text


def test_the_job_file_takes_constraint_as_a_string():
    spec = parse_job_file({"image": "x", "command": "true", "constraint": " v100|a100 "})
    assert spec.constraint == "v100|a100"
    with pytest.raises(SpecError, match=r"^constraint: expected a string"):
        parse_job_file({"image": "x", "command": "true", "constraint": ["v100"]})


@pytest.mark.parametrize(
    ("expr", "every_node", "counts", "masks"),
    [
        ("a100*2", "", [2], {"a100": 1, "v100": 0}),
        ("[a100*2&v100*1]", "", [2, 1], {"a100": 1, "v100": 2, "a100 v100": 3}),
        ("ib&[a*2&(b|c)*1]", "ib", [2, 1], {"a": 1, "c": 2, "a b": 3, "ib": 0}),
        ("a100*2&rack2", "rack2", [2], {"a100": 1, "rack2": 0}),
        ("(knl&hemi)*4", "", [4], {"knl hemi": 1, "knl": 0}),
    ],
)
def test_counts_split_into_what_every_node_needs_and_counted_terms(expr, every_node, counts, masks):
    """As SLURM reads them: [a*2&b*1] is 2 nodes with a and another with b; plain terms
    ANDed beside counts are needed by every node of the job."""
    c = parse_constraint(expr)
    assert c.text == expr
    assert not c.matching
    assert [n for _, n in c.counts] == counts
    assert c.counted == sum(counts)
    for features, mask in masks.items():
        assert c.count_mask(frozenset(features.split())) == mask, features
    assert c.satisfied_by(frozenset(every_node.split("&")) if every_node else frozenset())
    if every_node:
        assert not c.satisfied_by(frozenset({"a100", "a", "b", "knl"}))


def test_the_spec_check_refuses_counts_beyond_the_jobs_nodes_naming_the_field():
    spec = JobSpec(image="x", command=("true",), nodes=3, constraint="[a100*2&v100*1]")
    check_spec(spec, CLIENT_RULES)
    with pytest.raises(SpecError) as err:
        check_spec(
            JobSpec(image="x", command=("true",), nodes=2, constraint="[a100*2&v100*1]"),
            CLIENT_RULES,
        )
    assert str(err.value) == (
        "constraint: [a100*2&v100*1]: its counts ask for 3 node(s) but the job has 2 (nodes); "
        "give -N 3 or more"
    )
