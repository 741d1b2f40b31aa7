"""Reservations in the policy: booked GPUs run only the jobs that booked them (unless lent)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rota.scheduler.policy import POLICIES, make_policy, reasons
from rota.scheduler.policy.snapshot import ReservationView
from tests.policy.builders import HOUR, make_job, make_node, make_running, make_snapshot, placed

NOW = 10 * HOUR


def resv(
    name: str = "lab-a",
    gpus: tuple[int, ...] = (0, 1, 2, 3),
    *,
    node: str = "n0",
    start: float = NOW - HOUR,
    end: float = NOW + 4 * HOUR,
    users: tuple[str, ...] = ("alice",),
    **kw: Any,
) -> ReservationView:
    return ReservationView(name, start, end, {node: gpus}, frozenset(users), **kw)


def decide(*reservations: ReservationView, pending=(), running=(), gpus: int = 8, policy="rota"):
    snap = make_snapshot(
        (make_node("n0", gpus),),
        tuple(pending),
        tuple(running),
        now=NOW,
        reservations=reservations,
    )
    return make_policy(policy, snap.config).decide(snap)


def gpus_of(plan, job_id: int) -> set[int]:
    return {g for _, idx in placed(plan)[job_id] for g in idx}


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_job_naming_an_open_reservation_runs_on_its_gpus_only(policy):
    plan = decide(resv(), pending=[make_job(1, 2, reservation="lab-a")], policy=policy)
    assert gpus_of(plan, 1) <= {0, 1, 2, 3}


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_other_jobs_stay_off_reserved_gpus(policy):
    plan = decide(resv(), pending=[make_job(1, 2, user="bob")], policy=policy)
    assert gpus_of(plan, 1) <= {4, 5, 6, 7}


def test_another_users_job_that_needs_the_reserved_gpus_waits_req_node_not_avail():
    plan = decide(resv(), pending=[make_job(1, 6, user="bob")])
    assert plan.placements == ()
    assert plan.reasons[1] == reasons.REQ_NODE_NOT_AVAIL


def test_a_job_of_a_user_the_reservation_does_not_allow_waits():
    plan = decide(resv(), pending=[make_job(1, 1, user="bob", reservation="lab-a")])
    assert plan.reasons[1] == reasons.RESERVATION


def test_an_account_in_the_reservation_allows_its_users():
    r = resv(users=(), accounts=frozenset({"vision"}))
    plan = decide(r, pending=[make_job(1, 1, user="bob", account="vision", reservation="lab-a")])
    assert gpus_of(plan, 1) <= {0, 1, 2, 3}


def test_a_job_naming_a_reservation_not_open_yet_waits_reservation():
    r = resv(start=NOW + HOUR, end=NOW + 2 * HOUR)
    plan = decide(r, pending=[make_job(1, 1, reservation="lab-a")])
    assert plan.reasons[1] == reasons.RESERVATION


def test_a_job_naming_a_deleted_or_ended_reservation_is_held():
    plan = decide(pending=[make_job(1, 1, reservation="gone")])
    assert plan.reasons[1] == reasons.RESERVATION_DELETED


def test_a_reservations_job_does_not_spill_outside_it():
    plan = decide(resv(gpus=(0,)), pending=[make_job(1, 2, reservation="lab-a")])
    assert plan.placements == ()
    assert plan.reasons[1] == reasons.BAD_CONSTRAINTS  # larger than the reservation


def test_a_long_job_is_not_backfilled_into_an_upcoming_window_but_a_short_one_is():
    upcoming = resv(gpus=tuple(range(8)), start=NOW + 2 * HOUR, end=NOW + 3 * HOUR)
    long_job = make_job(1, 1, user="bob", time_limit=3 * HOUR)
    short_job = make_job(2, 1, user="bob", time_limit=HOUR)
    plan = decide(upcoming, pending=[long_job, short_job])
    assert 1 not in placed(plan) and 2 in placed(plan)
    assert plan.reasons[1] == reasons.REQ_NODE_NOT_AVAIL


def test_maint_blocks_everyone_and_lends_nothing():
    maint = resv(gpus=tuple(range(8)), users=("root",), maint=True)
    jobs = [make_job(1, 1), make_job(2, 1, user="bob", preemptible=True)]
    plan = decide(maint, pending=jobs)
    assert plan.placements == ()
    assert plan.reasons[1] == plan.reasons[2] == reasons.REQ_NODE_NOT_AVAIL


def test_maint_overrides_an_overlapping_reservation():
    maint = resv("maint", gpus=(0, 1, 2, 3), users=("root",), maint=True)
    plan = decide(maint, resv(), pending=[make_job(1, 1, reservation="lab-a")])
    assert plan.placements == ()


def test_idle_reserved_gpus_are_lent_to_preemptible_jobs_only():
    r = resv(gpus=tuple(range(8)))
    jobs = [make_job(1, 2, user="bob", preemptible=True), make_job(2, 2, user="carol")]
    plan = decide(r, pending=jobs)
    assert 1 in placed(plan) and 2 not in placed(plan)
    assert plan.reasons[2] == reasons.REQ_NODE_NOT_AVAIL


def test_no_lending_when_lend_is_off():
    r = resv(gpus=tuple(range(8)), lend=False)
    plan = decide(r, pending=[make_job(1, 2, user="bob", preemptible=True)])
    assert plan.placements == ()


def test_borrowers_are_preempted_when_the_reservations_job_arrives():
    r = resv(gpus=tuple(range(8)))
    old = make_running(50, gpus=(0, 1, 2, 3), user="bob", preemptible=True, start=NOW - 60)
    new = make_running(51, gpus=(4, 5, 6, 7), user="bob", preemptible=True, start=NOW - 30)
    plan = decide(r, pending=[make_job(1, 4, reservation="lab-a")], running=[old, new])
    assert plan.preemptions == (51,)
    assert 1 not in placed(plan)


def test_jobs_that_are_not_preemptible_are_never_preempted_for_a_reservation():
    r = resv(gpus=tuple(range(8)))
    holder = make_running(50, gpus=tuple(range(8)), user="bob", start=NOW - 60)
    plan = decide(r, pending=[make_job(1, 4, reservation="lab-a")], running=[holder])
    assert plan.preemptions == ()
    assert plan.reasons[1] == reasons.RESOURCES


def test_a_reservations_job_gets_a_time_limit_that_fits_its_window():
    # a 10-hour job in a window with 4 hours left starts (the daemon launches it with the
    # window's end as its limit); a job beside it reserved after those 4 hours is unaffected
    plan = decide(resv(), pending=[make_job(1, 1, reservation="lab-a", time_limit=10 * HOUR)])
    assert 1 in placed(plan)


def test_explain_names_the_blocking_reservation():
    snap = make_snapshot(
        (make_node("n0", 8),),
        (make_job(1, 6, user="bob"),),
        now=NOW,
        reservations=(resv(),),
    )
    why = make_policy("rota", snap.config).explain(snap, 1)
    assert why.reason == reasons.REQ_NODE_NOT_AVAIL
    assert why.reservation.startswith("lab-a (until ")


# ------------------------------------------------------------------ property


@st.composite
def reserved_snapshots(draw):
    nodes = tuple(
        make_node(f"n{i}", draw(st.integers(1, 8))) for i in range(draw(st.integers(1, 3)))
    )
    reservations = []
    taken: set[tuple[str, int]] = set()
    for k in range(draw(st.integers(0, 3))):
        node = draw(st.sampled_from(nodes))
        free = [g.index for g in node.gpus if (node.name, g.index) not in taken]
        if not free:
            continue
        gpus = tuple(draw(st.lists(st.sampled_from(free), min_size=1, unique=True)))
        taken |= {(node.name, g) for g in gpus}
        start = NOW + draw(st.sampled_from([-2, -1, 1, 3])) * HOUR
        reservations.append(
            ReservationView(
                f"r{k}",
                start,
                start + draw(st.sampled_from([1, 2, 5])) * HOUR,
                {node.name: gpus},
                frozenset({draw(st.sampled_from("uvw"))}),
                maint=draw(st.integers(0, 5)) == 0,
                lend=draw(st.booleans()),
            )
        )
    names = [r.name for r in reservations] + ["", "", "gone"]
    pending = tuple(
        make_job(
            i,
            draw(st.integers(0, 4)),
            user=draw(st.sampled_from("uvw")),
            time_limit=draw(st.sampled_from([0.5, 1, 2, 4, 8])) * HOUR,
            preemptible=draw(st.booleans()),
            interactive=draw(st.booleans()),
            reservation=draw(st.sampled_from(names)),
        )
        for i in range(1, draw(st.integers(0, 10)) + 1)
    )
    policy = draw(st.sampled_from(sorted(POLICIES)))
    return make_snapshot(nodes, pending, now=NOW, reservations=tuple(reservations)), policy


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reserved_snapshots())
def test_no_job_ever_starts_on_gpus_reserved_for_others_unless_lent(case):
    snap, policy = case
    plan = make_policy(policy, snap.config).decide(snap)
    jobs = {j.id: j for j in snap.pending}
    for p in plan.placements:
        job = jobs[p.job_id]
        limit = snap.config.limit_of(job.time_limit)
        for a in p.allocations:
            for g in a.gpu_indices:
                for r in snap.reservations:
                    if g not in r.gpus.get(a.node, ()) or r.end <= NOW:
                        continue
                    if job.reservation == r.name:
                        assert r.active(NOW) and r.allows(job.user, job.account)
                        continue
                    if r.active(NOW):
                        assert r.lend and not r.maint, (job, r)
                        assert job.preemptible or job.interactive, (job, r)
                    else:
                        assert NOW + limit <= r.start, (job, r)
        if job.reservation:
            r = next(r for r in snap.reservations if r.name == job.reservation)
            cells = r.cells()
            assert all((a.node, g) in cells for a in p.allocations for g in a.gpu_indices)


def test_a_job_too_big_for_its_reservation_preempts_no_borrower():
    r = resv(gpus=(0, 1))
    borrower = make_running(50, gpus=(0,), user="bob", preemptible=True, start=NOW - 60)
    plan = decide(r, pending=[make_job(1, 4, reservation="lab-a")], running=[borrower])
    assert plan.preemptions == ()
    assert plan.reasons[1] == reasons.BAD_CONSTRAINTS


def test_estimates_follow_the_windows():
    """gqueue --start: a job waiting for its window starts at it; a job only reserved GPUs
    could hold starts when the window ends, or after a later window when its time limit would
    run into one."""
    r = resv(start=NOW + HOUR, end=NOW + 2 * HOUR)
    plan = decide(r, pending=[make_job(1, 1, reservation="lab-a")])
    assert plan.est_start[1] == NOW + HOUR
    now_open = resv(end=NOW + 2 * HOUR)
    plan = decide(now_open, pending=[make_job(2, 6, user="bob", time_limit=HOUR)])
    assert plan.reasons[2] == reasons.REQ_NODE_NOT_AVAIL
    assert plan.est_start[2] == NOW + 2 * HOUR
    later = resv("lab-b", start=NOW + 3 * HOUR, end=NOW + 5 * HOUR)
    plan = decide(now_open, later, pending=[make_job(3, 6, user="bob", time_limit=2 * HOUR)])
    assert plan.est_start[3] == NOW + 5 * HOUR, "two hours from the first end meet lab-b"
