"""sbatch's -w/--nodelist and -x/--exclude in every policy: a job runs only on the nodes it
lists and never on those it excludes; it waits (Resources) while its nodes are busy, says
NodeDown while they are down, and the submit-time check names the field when no registered
node could ever do."""

from __future__ import annotations

import pytest

from rota.scheduler.policy import reasons
from rota.scheduler.policy.never_fits import never_fits
from tests.policy.builders import make_job, make_node, make_running, make_snapshot, placed, plan_of

POLICIES = ["rota", "fifo-backfill", "fifo", "first-fit"]
NODES = (make_node("gpu01", 2), make_node("gpu02", 2), make_node("gpu03", 8))


@pytest.mark.parametrize(
    ("nodelist", "exclude", "gpus", "where"),
    [
        ({"gpu01"}, set(), 1, {"gpu01"}),
        ({"gpu01", "gpu02"}, set(), 2, {"gpu01", "gpu02"}),
        (set(), {"gpu03"}, 1, {"gpu01", "gpu02"}),
        (set(), {"gpu01", "gpu02"}, 1, {"gpu03"}),
        ({"gpu01", "gpu03"}, {"gpu03"}, 2, {"gpu01"}),
        ({"gpu01"}, set(), 4, None),  # gpu01 has 2 GPUs: never
        (set(), {"gpu03"}, 4, None),  # only gpu03 has 4
    ],
)
@pytest.mark.parametrize("policy", POLICIES)
def test_a_job_runs_only_on_listed_and_never_on_excluded_nodes(
    nodelist, exclude, gpus, where, policy
):
    job = make_job(gpus=gpus, nodelist=frozenset(nodelist), exclude=frozenset(exclude))
    plan = plan_of(make_snapshot(NODES, (job,)), policy)
    if where is None:
        assert plan.placements == ()
        if policy != "first-fit":  # first-fit names no constraint reason for anything
            assert plan.reasons[job.id] == reasons.BAD_CONSTRAINTS
    else:
        assert placed(plan)[job.id][0][0] in where


@pytest.mark.parametrize("policy", POLICIES)
def test_a_job_waits_for_its_busy_node_while_others_are_free(policy):
    busy = make_running(9, "gpu01", (0, 1))
    job = make_job(gpus=1, nodelist=frozenset({"gpu01"}))
    plan = plan_of(make_snapshot(NODES, (job,), running=(busy,), now=10.0), policy)
    assert plan.placements == ()
    assert plan.reasons[job.id] in (reasons.RESOURCES, reasons.PRIORITY)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_job_whose_listed_node_is_down_says_node_down(policy):
    nodes = (make_node("gpu01", 2, schedulable=False), *NODES[1:])
    job = make_job(gpus=1, nodelist=frozenset({"gpu01"}))
    plan = plan_of(make_snapshot(nodes, (job,)), policy)
    assert plan.placements == ()
    assert plan.reasons[job.id] == reasons.NODE_DOWN


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"nodelist": frozenset({"gpu09"})}, "nodelist: gpu09 is not registered"),
        (
            {"nodelist": frozenset({"gpu07", "gpu08", "gpu01"})},
            "nodelist: gpu[07-08] are not registered",
        ),
        (
            {"nodelist": frozenset({"gpu01"}), "nodes": 2},
            "nodelist: the job needs 2 node(s), but the listed nodes less the excluded ones are 1",
        ),
        (
            {"exclude": frozenset({"gpu01", "gpu02", "gpu03"})},
            "exclude: the job needs 1 node(s), but the nodes not excluded are 0",
        ),
        (
            {"nodelist": frozenset({"gpu01", "gpu02"}), "gpus": 4},
            "resources.gpus: 4 GPU(s) per node, but the largest node, gpu02, has 2",
        ),
        ({"nodelist": frozenset({"gpu03"}), "gpus": 4}, None),
    ],
)
def test_the_submit_check_names_the_field_no_registered_node_satisfies(kw, why):
    job = make_job(**{"gpus": 1, **kw})
    assert never_fits(job, NODES) == why
