"""The simulator's attained-service references and checkpointable jobs (small traces only)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rota.scheduler.policy import make_policy
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.sim import main, simulate
from rota.scheduler.sim.trace import TraceJob, mark_checkpointable, with_limits
from tests.policy.test_simulator import generated_jobs, write_generic

HOUR = 3600.0


def _long_then_short(checkpointable: bool) -> list[TraceJob]:
    """A 10-hour 8-GPU job, then a 1-hour job arriving 2 hours later, on one 8-GPU node."""
    return [
        TraceJob(1, 0.0, 10 * HOUR, 8, "u", "a", 100 * HOUR, checkpointable=checkpointable),
        TraceJob(2, 2 * HOUR, HOUR, 1, "v", "b", 100 * HOUR),
    ]


@pytest.mark.parametrize(
    ("policy", "checkpointable", "short_end", "long_end", "preemptions"),
    [
        # the long job (queue 2 after 16 GPU-hours) is preempted, keeps its 2 h of progress
        # and pays the 60 s restart: it ends at 2 h + 1 h + 8 h + 60 s
        ("rota", True, 3 * HOUR, 11 * HOUR + 60, 1),
        ("las", True, 3 * HOUR, 11 * HOUR + 60, 1),
        # a job that is not checkpointable is never preempted by attained service
        ("rota", False, 11 * HOUR, 10 * HOUR, 0),
        ("fifo-backfill", True, 11 * HOUR, 10 * HOUR, 0),
    ],
)
def test_preempted_checkpointable_job_keeps_its_progress(
    policy, checkpointable, short_end, long_end, preemptions
):
    jobs = _long_then_short(checkpointable)
    result = simulate(jobs, make_policy(policy), nodes=1, gpus_per_node=8, restart_cost=60.0)
    long_job, short_job = result.records
    assert (short_job.end, long_job.end) == (short_end, long_end)
    assert result.preemptions == preemptions
    assert not long_job.timed_out


def test_the_limit_bounds_a_checkpointable_job_over_all_attempts():
    jobs = _long_then_short(True)
    jobs[0] = replace(jobs[0], time_limit=5 * HOUR)
    long_job, _ = simulate(jobs, make_policy("rota"), nodes=1, gpus_per_node=8).records
    assert long_job.timed_out and long_job.served == 5 * HOUR


def test_min_runtime_holds_the_preemption_back():
    jobs = _long_then_short(True)
    config = PolicyConfig(min_runtime=3 * HOUR)
    result = simulate(jobs, make_policy("rota", config), nodes=1, gpus_per_node=8)
    assert result.preemptions == 0  # 2 h < 3 h when the short job arrives; no event later


def test_limit_modes():
    jobs = generated_jobs(50)
    assert all(j.time_limit is None for j in with_limits(jobs, "none", 0))
    noisy = with_limits(jobs, "noisy", 0)
    assert all(j.duration <= j.time_limit and j.time_limit % HOUR == 0 for j in noisy)
    assert noisy == with_limits(jobs, "noisy", 0)
    with pytest.raises(ValueError, match="unknown limits mode"):
        with_limits(jobs, "exact", 0)
    assert sum(j.checkpointable for j in mark_checkpointable(jobs, 0.5, 0)) not in (0, 50)


def test_cli_runs_the_references(tmp_path: Path):
    trace = tmp_path / "t.csv"
    write_generic(trace, generated_jobs(80))
    for policy in ("las", "easy", "rota"):
        out = tmp_path / f"{policy}.json"
        args = [str(trace), "--nodes", "2", "--gpus-per-node", "8", "--policy", policy]
        args += ["--limits", "none", "--checkpointable", "1", "--json", str(out)]
        assert main(args) == 0
        figures = json.loads(out.read_text())
        assert figures["limits"] == "none" and figures["checkpointable"] == 1.0
        assert figures["jobs"] == 80 and figures["unfinished"] == 0
        assert figures["p99_jct"] > 0 and figures["avg_jct"] > 0
    assert main([str(trace), "--nodes", "1", "--gpus-per-node", "8", "--checkpointable", "2"]) == 2
