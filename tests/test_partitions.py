"""Partitions through the scheduler's services: what a submission may name, the defaults it
gets, where its jobs run and what is stored (tests/policy/test_partitions.py has the policy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.errors import AccessDenied, UserError
from rota.settings import SettingsError, build
from tests.support.core import RotaHarness

PARTITIONS = {
    "a": {"nodes": ["a*"], "default": True, "max_time": "2h", "default_time": "30m"},
    "b": {"nodes": ["b0"], "default_gpus": 1, "max_gpus_per_job": 2, "priority_tier": 1},
    "staff": {"nodes": ["a*", "b*"], "allow_users": ["bob"], "allow_accounts": ["ops"]},
}


@pytest.fixture
def lab(tmp_path: Path) -> RotaHarness:
    h = RotaHarness(tmp_path, partitions=PARTITIONS)
    h.connect("a0", gpus=2)
    h.connect("b0", gpus=2)
    return h


def test_an_unknown_partition_is_refused_naming_the_partitions(lab: RotaHarness) -> None:
    with pytest.raises(UserError, match=r"partition: unknown partition 'gpu'; partitions: a, b"):
        lab.submit(gpus=1, partition="gpu")
    with pytest.raises(UserError, match="unknown partition 'gpu'"):
        lab.submit(gpus=1, partition="a,gpu")


def test_a_partition_the_user_may_not_use_is_refused_naming_the_rule(lab: RotaHarness) -> None:
    with pytest.raises(AccessDenied, match=r"'staff' admits only allow_users: bob; "):
        lab.submit(gpus=1, partition="staff")
    ops = lab.submit(gpus=1, partition="staff", account="ops")  # the account admits ann
    assert lab.s.jobs.get(ops)[0].spec.partition == "staff"


def test_limits_are_refused_naming_the_limit(lab: RotaHarness) -> None:
    with pytest.raises(
        UserError, match=r"time_limit: 10800s exceeds the max_time of partition 'a'"
    ):
        lab.submit(gpus=1, time_limit=3 * 3600.0)
    with pytest.raises(
        UserError, match=r"4 GPUs in all exceeds the max_gpus_per_job of partition 'b' \(2\)"
    ):
        lab.submit(gpus=2, nodes=2, partition="b")
    # a list keeps the partitions whose limits the job meets
    long = lab.submit(gpus=1, time_limit=3 * 3600.0, partition="a,b")
    assert lab.s.jobs.get(long)[0].spec.partition == "b"


def test_defaults_come_from_the_first_usable_partition(lab: RotaHarness) -> None:
    plain = lab.s.jobs.get(lab.submit(gpus=1))[0]
    assert (plain.spec.partition, plain.time_limit) == ("a", 1800.0)  # the default partition's
    in_b = lab.s.jobs.get(lab.submit(partition="b"))[0]
    assert (in_b.spec.gpus, in_b.time_limit) == (1, 24 * 3600.0)  # b's GPUs, the lab's limit


def test_jobs_run_in_their_partitions_and_the_placement_is_stored(lab: RotaHarness) -> None:
    first = lab.submit(gpus=2, partition="a")
    either = lab.submit(gpus=2, partition="a,b")
    assert sorted(o.job_id for o in lab.launches(lab.schedule())) == [int(first), int(either)]
    assert lab.s.jobs.get(first)[0].node_names == ["a0"]
    assert lab.s.jobs.get(either)[0].node_names == ["b0"]
    assert lab.s.jobs.get(either)[0].partition == "b"
    lab.restart()
    assert lab.s.jobs.get(either)[0].partition == "b"
    assert lab.s.jobs.get(first)[0].partition == "a"


def test_a_batch_job_is_told_its_partition(lab: RotaHarness) -> None:
    """``SLURM_JOB_PARTITION`` names the partition the job was placed in (of ``-p a,b``)."""
    lab.submit(gpus=2, partition="a")  # first in line: it takes a0
    either = lab.submit(gpus=2, partition="a,b", slurm_env=True)
    (launch,) = [o for o in lab.launches(lab.schedule()) if o.job_id == int(either)]
    assert launch.env["SLURM_JOB_PARTITION"] == lab.s.jobs.get(either)[0].partition == "b"


def test_a_higher_tier_starts_first(lab: RotaHarness) -> None:
    lab.clock.now += 10
    older = lab.submit(gpus=2, partition="staff", account="ops")
    lab.clock.now += 10
    tiered = lab.submit(gpus=2, partition="b")
    lab.connect("a0", gpus=0)  # only b0's two GPUs are left
    launched = [o.job_id for o in lab.launches(lab.schedule())]
    assert launched == [int(tiered)]
    assert lab.s.jobs.get(older)[0].partition == ""


def test_the_settings_are_checked() -> None:
    with pytest.raises(SettingsError, match=r"^partitions must have only one default, got a, b"):
        build(
            SchedulerConfig,
            "scheduler",
            {"partitions": {"a": {"default": True}, "b": {"default": True}}},
        )
    with pytest.raises(
        SettingsError, match=r"^partitions must mark one of a, b as the default \(default: true\)"
    ):
        build(SchedulerConfig, "scheduler", {"partitions": {"a": {}, "b": {}}})
    with pytest.raises(SettingsError, match=r"default_time .* must be <= max_time"):
        build(
            SchedulerConfig,
            "scheduler",
            {"partitions": {"a": {"default_time": "2h", "max_time": "1h"}}},
        )
    with pytest.raises(
        SettingsError,
        match=r"^partitions must have names as jobs do \(use up to 128 .*\), got 'a b'",
    ):
        build(SchedulerConfig, "scheduler", {"partitions": {"a b": {}}})
