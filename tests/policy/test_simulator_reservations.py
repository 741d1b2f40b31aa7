"""``rota simulate --reservations``: a booking pattern changes what the queue gets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rota.scheduler.policy import make_policy
from rota.scheduler.sim import main, simulate
from rota.scheduler.sim.bookings import read_bookings
from rota.scheduler.sim.trace import TraceError, TraceJob

HOUR = 3600.0
HEADER = "name,start,end,nodes,users,accounts,gpus,flags,lend\n"


def bookings(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "bookings.csv"
    path.write_text(HEADER + "".join(r + "\n" for r in rows))
    return path


def run(tmp_path: Path, jobs: list[TraceJob], *rows: str, policy: str = "rota"):
    booked = read_bookings(bookings(tmp_path, *rows), nodes=1, gpus_per_node=4)
    result = simulate(jobs, make_policy(policy), nodes=1, gpus_per_node=4, reservations=booked)
    return {r.job.id: r for r in result.records}, result


@pytest.mark.parametrize("policy", ["rota", "fifo-backfill", "first-fit"])
def test_booked_gpus_run_their_jobs_and_others_wait_for_the_window_to_end(tmp_path, policy):
    jobs = [
        TraceJob(1, 0.0, HOUR, 4, "bob", "physics", 2 * HOUR),
        TraceJob(2, 0.0, HOUR, 2, "alice", "vision", 2 * HOUR, reservation="lab"),
        TraceJob(3, 0.0, 30 * 60, 2, "carol", "physics", HOUR),
    ]
    done, result = run(tmp_path, jobs, "lab,0,36000,0,alice,,,,no", policy=policy)
    assert done[2].start == 0.0, "the reservation's job starts in its window"
    assert min(done[1].start, done[3].start) == 10 * HOUR, "the others wait for the window end"
    assert result.booked_gpu_seconds == 4 * 10 * HOUR
    assert result.owner_gpu_seconds == 2 * HOUR and result.lent_gpu_seconds == 0.0


def test_a_job_in_a_window_is_killed_at_its_end_and_short_jobs_fill_the_gap_before(tmp_path):
    jobs = [
        TraceJob(1, 0.0, 3 * HOUR, 4, "alice", "vision", 4 * HOUR, reservation="lab"),
        TraceJob(2, 0.0, 30 * 60, 4, "bob", "physics", HOUR),  # ends before the window
        TraceJob(3, 0.0, 30 * 60, 4, "carol", "physics", 3 * HOUR),  # would run into it
    ]
    done, _ = run(tmp_path, jobs, "lab,7200,10800,0,alice,,,,")
    assert done[2].start == 0.0
    assert done[1].start == 2 * HOUR and done[1].end == 3 * HOUR and done[1].timed_out
    assert done[3].start == 3 * HOUR, "no backfill into the window"


def test_a_daily_window_recurs(tmp_path):
    jobs = [
        TraceJob(1, 0.0, HOUR, 4, "alice", "vision", HOUR, reservation="standup"),
        TraceJob(2, 3 * HOUR, HOUR, 4, "alice", "vision", HOUR, reservation="standup"),
    ]
    done, result = run(tmp_path, jobs, "standup,0,7200,0,alice,,,DAILY,")
    assert done[1].start == 0.0
    assert done[2].start == 24 * HOUR, "waits for the next day's window"
    assert result.owner_gpu_seconds == 2 * 4 * HOUR


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("x,0,10,0,,,,,", "users/accounts"),
        ("x,0,10,5,alice,,,,", "nodes: '5' is outside 0-0"),
        ("x,0,10,0,alice,,,SOMETIMES,", "flags: unknown 'SOMETIMES'"),
        ("x,10,5,0,alice,,,,", "start/end"),
        ("x,0,10,0,alice,,9,,", "gpus: 1 to 4"),
    ],
)
def test_a_bad_booking_names_the_line_and_column(tmp_path, row, message):
    with pytest.raises(TraceError, match=f"bookings\\.csv:2: {re.escape(message)}"):
        read_bookings(bookings(tmp_path, row), nodes=1, gpus_per_node=4)


def test_overlapping_bookings_are_refused_but_maint_may_overlap(tmp_path):
    rows = ("a,0,7200,0,alice,,,,", "m,0,3600,0,root,,,MAINT,")
    assert [r.name for r in read_bookings(bookings(tmp_path, *rows), 1, 4)] == ["a", "m"]
    clash = bookings(tmp_path, "a,0,7200,0,alice,,2,DAILY,", "b,90000,91000,0,bob,,,,")
    with pytest.raises(TraceError, match=r"bookings\.csv:3: start/end: its GPUs are booked by a"):
        read_bookings(clash, 1, 4)


def test_the_cli_reports_what_the_bookings_cost(tmp_path, capsys):
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "submit_time,duration,gpus,user,account,time_limit,reservation\n"
        "0,3600,2,alice,vision,7200,lab\n"
        "0,3600,4,bob,physics,7200,\n"
    )
    path = bookings(tmp_path, "lab,0,36000,0,alice,,,,no")
    out = tmp_path / "run.json"
    cluster = ["--nodes", "1", "--gpus-per-node", "4"]
    assert main([str(trace), *cluster, "--reservations", str(path), "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["reservations"] == str(path)
    assert figures["reserved_gpu_hours"] == 40.0
    assert figures["reserved_owner_share"] == pytest.approx(2 / 40)
    assert figures["reserved_lent_share"] == 0.0
    assert figures["avg_queue"] == pytest.approx(5 * 3600.0), "bob waited the 10 h window"
    assert "reserved_gpu_hours" in capsys.readouterr().out
    bad = bookings(tmp_path, "lab,0,10,7,alice,,,,")
    assert main([str(trace), *cluster, "--reservations", str(bad)]) == 1
    assert "bookings.csv:2: nodes" in capsys.readouterr().err


def test_running_jobs_keep_their_limit_outside_a_window_and_get_the_window_inside(tmp_path):
    seen: dict[int, float] = {}
    policy = make_policy("fifo-backfill")
    decide = policy.decide

    def watch(snapshot):
        seen.update((r.id, r.time_limit) for r in snapshot.running)
        return decide(snapshot)

    policy.decide = watch  # type: ignore[method-assign]
    jobs = [
        TraceJob(1, 0.0, HOUR, 1, "bob", "physics", 2 * HOUR),
        TraceJob(2, 0.0, HOUR, 2, "alice", "vision", 5 * HOUR, reservation="lab"),
        TraceJob(3, 60.0, HOUR, 4, "carol", "physics", HOUR),  # a pass while both run
    ]
    booked = read_bookings(bookings(tmp_path, "lab,0,10800,0,alice,,2,,"), 1, 4)
    simulate(jobs, policy, nodes=1, gpus_per_node=4, reservations=booked)
    assert seen[1] == 2 * HOUR, "the limit, not the run time the simulator knows"
    assert seen[2] == 3 * HOUR, "cut to the window's end"
