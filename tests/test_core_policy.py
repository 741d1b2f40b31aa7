"""The rota policy wired into the services, driven in-process with a fake clock: the snapshot's
fields, fair share that survives a restart, limits, arrays, gangs, preemption and ``explain``."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from rota.jobspec import JobSpec
from rota.messages import KillOrder, RunningAttempt
from rota.scheduler.cluster.users import Principal
from rota.scheduler.config import SchedulerConfig, load_config, policy_config
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.jobs import SubmitItem, SubmitResult
from rota.scheduler.core.services import Services, build_services
from rota.scheduler.engine import Engine
from rota.scheduler.policy import make_policy
from rota.scheduler.policy.config import PolicyConfig
from rota.scheduler.policy.multifactor import RotaPolicy
from rota.scheduler.policy.queue import SortKey
from rota.scheduler.policy.snapshot import PendingJob, Snapshot
from rota.scheduler.store.store import Store
from rota.states import JobState
from tests.support.core import RotaHarness


@pytest.fixture
def h(tmp_path: Path) -> RotaHarness:
    return RotaHarness(tmp_path)


def test_rota_is_the_default_policy_and_settings_reach_the_snapshot(tmp_path: Path) -> None:
    assert SchedulerConfig().policy == "rota"
    h = RotaHarness(
        tmp_path,
        weights={"age": 7},
        limits={"max_gpus_per_user": 3},
        account_shares={"vision": 2},
        qos_levels={"urgent": 0.9},
        backfill_depth=4,
        usage_half_life=3600,
        preemption=False,
    )
    h.connect("n1", gpus=4)
    h.submit(gpus=1, array="0-3%2", qos="high")
    cfg = h.s.planner.snapshot().config
    assert cfg.weights.age == 7 and cfg.weights.qos == 4000  # merged over the defaults
    assert cfg.limits.max_gpus_per_user == 3
    assert cfg.limits.max_pending_per_user == 10_000  # on by default (docs/security.md)
    assert cfg.account_shares == {"vision": 2.0} and cfg.qos_levels["urgent"] == 0.9
    assert cfg.qos_levels["high"] == 1.0 and cfg.backfill_depth == 4
    assert cfg.usage_half_life == 3600 and not cfg.preemption
    assert cfg.default_time_limit == h.config.default_time_limit


def test_snapshot_fills_array_limit_default_limit_and_running_fields(h: RotaHarness) -> None:
    h.connect("n1", gpus=4)
    first = h.submit(gpus=1, array="0-3%2", qos="high", exclusive=False)
    limited = h.submit(gpus=1, time_limit=600.0)
    pending = {j.id: j for j in h.s.planner.snapshot().pending}
    array_id = int(first.split("_")[0])
    task = next(j for j in pending.values() if j.array_job_id == array_id)
    assert task.array_task_limit == 2 and task.default_limit and task.qos == "high"
    assert not pending[int(limited)].default_limit and pending[int(limited)].time_limit == 600
    h.schedule()
    running = {j.id: j for j in h.s.planner.snapshot().running}
    assert sum(1 for j in running.values() if j.array_job_id == array_id) == 2
    assert not any(j.stopping for j in running.values())
    assert running[array_id].qos == "high"
    h.s.jobs.cancel([limited], "ann")
    assert h.s.planner.snapshot().running  # still there while the kill is not confirmed ...
    stopping = {j.id for j in h.s.planner.snapshot().running if j.stopping}
    assert stopping == {int(limited)}  # ... but stopping: its GPUs count as released


def test_array_percent_limit_keeps_tasks_waiting(h: RotaHarness) -> None:
    h.connect("n1", gpus=4)
    first = h.submit(gpus=1, array="0-5%2")
    array_id = first.split("_")[0]
    launches = h.launches(h.schedule())
    assert len(launches) == 2
    waiting = [j for j in h.s.lookup.resolve(array_id) if j.state is JobState.PENDING]
    assert len(waiting) == 4 and {j.reason for j in waiting} == {"JobArrayTaskLimit"}
    done = launches[0]
    h.run("n1", done.display_id)
    h.event("n1", done.display_id, "EXITED", exit_code=0)
    assert len(h.launches(h.schedule())) == 1, "one task ended, one more starts"


def test_gpu_limit_per_user_and_pending_limit_at_submit(tmp_path: Path) -> None:
    h = RotaHarness(tmp_path, limits={"max_gpus_per_user": 2, "max_pending_per_user": 3})
    h.connect("n1", gpus=4)
    a, b = h.submit(gpus=2), h.submit(gpus=1)
    (started,) = h.launches(h.schedule())
    waiting = b if started.display_id == a else a
    assert h.s.jobs.get(waiting)[0].reason == "QOSMaxGRESPerUser"
    h.submit(gpus=1)
    h.submit(gpus=1)
    with pytest.raises(UserError, match=r"user ann would have 4 pending jobs; the limit is 3"):
        h.submit(gpus=1)
    with pytest.raises(UserError, match="max_pending_per_user"):
        h.s.jobs.submit([SubmitItem(JobSpec(image="i", command=("x",), array="0-1"))], "ann")
    (ok,) = h.s.jobs.submit([SubmitItem(JobSpec(image="i", command=("x",)))], "bob")
    assert ok.job_ids, "the limit is per user"


def test_preemption_stops_the_victim_then_gives_its_gpus_to_the_waiting_job(
    h: RotaHarness,
) -> None:
    h.connect("n1", gpus=2)
    low = h.submit(gpus=2, qos="low", preemptible=True)
    h.schedule()
    h.run("n1", low)
    h.clock.now += 100
    high = h.submit(gpus=2, qos="high")
    orders = h.schedule()
    why = f"preempted for job {high} of a higher class (QoS, priority)"
    # the warning: SIGTERM (the job set no signal) preemption_grace seconds before the stop
    warn = ("TERM", h.config.preemption_grace)
    assert orders == [("n1", KillOrder(int(low), 1, why, h.config.kill_grace, *warn))]
    assert h.state(low) is JobState.COMPLETING and h.state(high) is JobState.PENDING
    assert h.launches(h.schedule()) == [], "the victim's GPUs are not free until it is gone"
    h.event("n1", low, "KILLED", exit_code=143)
    record, events = h.s.jobs.get(low)
    assert record.state is JobState.PENDING
    assert [e.new_state for e in events][-2:] == ["PREEMPTED", "PENDING"]
    assert events[-3].reason == why
    # the requeued job keeps its attained service (2 GPUs x 100 s) and its preemption time
    assert (record.attained, record.preempted_at) == (200.0, (h.clock.now,))
    (launch,) = h.launches(h.schedule())
    assert launch.job_id == int(high)
    h.run("n1", high)
    h.event("n1", high, "EXITED", exit_code=0)
    (again,) = h.launches(h.schedule())
    assert again.job_id == int(low) and again.attempt == 2


def test_no_preemption_unless_the_waiting_job_then_fits(h: RotaHarness) -> None:
    h.connect("n1", gpus=2)
    keep = h.submit(gpus=1, qos="low")
    victim = h.submit(gpus=1, qos="low", preemptible=True)
    h.schedule()
    h.run("n1", keep)
    h.run("n1", victim)
    h.submit(gpus=2, qos="high")
    assert h.schedule() == [], "preempting the one preemptible job would not make room"
    assert h.state(victim) is JobState.RUNNING


def test_a_preemptible_qos_makes_its_jobs_preemptible(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text("scheduler:\n  preemptible_qos: [scavenger]\n  open_registration: true\n")
    h = RotaHarness(tmp_path, **vars(load_config(path)))
    h.connect("n1", gpus=2)
    normal = h.submit(gpus=1, qos="low")  # low, but neither flagged nor of that QoS
    scavenger = h.submit(gpus=1, qos="scavenger")
    h.schedule()
    h.run("n1", normal)
    h.run("n1", scavenger)
    high = h.submit(gpus=1, qos="high")
    orders = h.schedule()
    why = f"preempted for job {high} of a higher class (QoS, priority)"
    warn = ("TERM", h.config.preemption_grace)
    assert orders == [("n1", KillOrder(int(scavenger), 1, why, h.config.kill_grace, *warn))]
    assert h.state(normal) is JobState.RUNNING


def test_gang_launch_orders_carry_the_rendezvous_env(h: RotaHarness) -> None:
    h.connect("n1", gpus=2)
    h.connect("n2", gpus=2)
    gang = h.submit(gpus=2, nodes=2)
    launches = h.launches(h.schedule())
    assert len(launches) == 2
    envs = {o.env["NODE_RANK"]: o.env for o in launches}
    assert set(envs) == {"0", "1"}
    for env in envs.values():
        assert env["WORLD_SIZE"] == env["ROTA_NNODES"] == "2"
        assert env["ROTA_GPUS_PER_NODE"] == "2" and env["MASTER_PORT"].isdigit()
    assert all(o.host_network for o in launches) and gang


def test_gangs_led_from_one_node_get_different_master_ports(tmp_path: Path) -> None:
    h = RotaHarness(tmp_path, master_port_range=(29500, 29501))
    h.connect("n1", gpus=2)
    h.connect("n2", gpus=2)
    first = h.submit(gpus=1, nodes=2)
    h.s.jobs.cancel([h.submit(gpus=1)], "ann")
    second = h.submit(gpus=1, nodes=2)
    assert int(second) - int(first) == 2, "the same port by id alone"
    launches = h.launches(h.schedule())
    ports = {(o.job_id, o.env["MASTER_ADDR"], o.env["MASTER_PORT"]) for o in launches}
    assert len(ports) == 2, "every rank of a gang gets the same address and port"
    assert {p[1] for p in ports} == {"n1"}
    assert {p[2] for p in ports} == {"29500", "29501"}
    h.restart()
    h.connect("n1", gpus=2)  # unstarted launches are sent again, with the ports they had
    resent = h.launches(h.connect("n2", gpus=2)) + h.launches(h.schedule())
    assert {(o.job_id, o.env["MASTER_ADDR"], o.env["MASTER_PORT"]) for o in resent} == ports


def test_gang_is_all_or_nothing(h: RotaHarness) -> None:
    h.connect("n1", gpus=2)
    h.connect("n2", gpus=2)
    busy = h.submit(gpus=2, time_limit=600.0)
    h.schedule()
    h.run(h.s.jobs.get(busy)[0].allocation[0].node, busy)
    gang = h.submit(gpus=2, nodes=2)
    assert h.schedule() == [], "one free node is not enough for a gang of two"
    record = h.s.jobs.get(gang)[0]
    assert record.allocation == [] and record.reason == "Resources"
    assert record.estimated_start is not None


def test_fair_share_usage_is_kept_and_survives_a_restart(tmp_path: Path) -> None:
    h = RotaHarness(tmp_path, priority_period=1.0)
    h.connect("n1", gpus=2)
    job = h.submit(gpus=2, time_limit=7200.0)
    h.schedule()
    h.run("n1", job)
    h.clock.now += 3600
    h.event("n1", job, "EXITED", exit_code=0)
    h.clock.now += 10
    before = h.s.planner.snapshot().usage
    assert before.user["ann"] == pytest.approx(2 * 3600, rel=0.01)
    assert before.runtime_user["ann"] == pytest.approx(3600, rel=0.01)
    assert before.limit_ratio_user["ann"] == pytest.approx(0.5, rel=0.01)
    h.restart()
    after = h.s.planner.snapshot().usage
    assert after.user["ann"] == pytest.approx(before.user["ann"], rel=0.01)
    assert after.account["ann"] == pytest.approx(before.account["ann"], rel=0.01)
    assert after.runtime_user == pytest.approx(before.runtime_user, rel=0.01)


def test_usage_is_published_once_per_priority_period(tmp_path: Path) -> None:
    h = RotaHarness(tmp_path, priority_period=300.0)
    h.connect("n1", gpus=1)
    first = h.s.planner.snapshot().usage
    job = h.submit(gpus=1)
    h.schedule()
    h.clock.now += 60
    assert h.s.planner.snapshot().usage is first, "kept within the period"
    h.clock.now += 300
    assert h.s.planner.snapshot().usage.user["ann"] > 0
    h.restart()
    h.connect("n1", gpus=1, attempts=(RunningAttempt(int(job), 1),))
    h.clock.now += 60
    assert h.s.planner.snapshot().usage.user["ann"] > 0, "a running job counts after a restart"


def test_explain_names_the_reason_rank_and_factors(h: RotaHarness) -> None:
    h.connect("n1", gpus=2)
    h.submit(gpus=2)
    h.schedule()
    waiting = h.submit(gpus=2, priority=5)
    h.schedule()
    job, snap = h.s.jobs.explain_target(waiting)
    assert snap is not None
    why = h.s.policy.explain(snap, job.id)
    assert why.reason == "Resources" and why.rank == 1 and not why.starts_now
    assert why.est_start is not None
    factors = {f.name: f for f in why.factors}
    assert factors["job_priority"].contribution == 5
    assert why.priority == pytest.approx(sum(f.contribution for f in why.factors))
    assert why.order_by == "attained-service queue, then multifactor priority"
    running, none = h.s.jobs.explain_target("1")
    assert none is None and running.state is JobState.CONFIGURING
    fifo = make_policy("fifo-backfill", snap.config).explain(snap, job.id)
    assert fifo.order_by == "submission time" and fifo.factors == () and fifo.priority == 0
    assert fifo.reason == "Resources" and fifo.rank == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("weights: 5\n", "weights must be a map"),
        ("limits: {max_gpu_per_user: 3}\n", "unknown limits key"),
        ("limits: {max_gpus_per_user: -1}\n", "must be >= 0"),
        ("backfill_depth: lots\n", "backfill_depth must be a number"),
        ("usage_half_life: 0\n", "must be > 0"),
        ("policy: best\n", "unknown policy 'best'"),
        ("preemptible_qos: low\n", "preemptible_qos must be a list of names"),
        ("scheduler: [1, 2]\n", "settings must be a map"),
        ("node_timeout: soon\n", "node_timeout"),
        ("default_time_limit: 0\n", "default_time_limit must be > 0"),
        ("default_share: 0\n", "default_share must be > 0"),
        ("backfill_max_job_test: -1\n", "backfill_max_job_test must be >= 0"),
    ],
)
def test_bad_policy_settings_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_config(path)


def test_policy_settings_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(
        "scheduler:\n  usage_half_life: 2d\n  priority_period: 1m\n  qos_levels: {urgent: 0.9}\n"
        "  default_share: 0.5\n  backfill_max_job_test: 200\n"
    )
    cfg = policy_config(load_config(path))
    assert cfg.default_share == 0.5 and cfg.backfill_max_job_test == 200
    assert cfg.usage_half_life == 2 * 86400 and cfg.priority_period == 60
    assert cfg.qos_level("urgent") == 0.9 and cfg.qos_level("low") == 0.0


class StuckRota(RotaPolicy):
    """rota whose pass stops while ranking the queue (its lock held, its order cache half
    built) until ``release`` is set."""

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__(config)
        self.inside = threading.Event()
        self.release = threading.Event()

    def ranking(self, snapshot: Snapshot) -> tuple[object, SortKey]:
        context, key = super().ranking(snapshot)

        def stuck(job: PendingJob) -> object:
            self.inside.set()
            self.release.wait(60)
            return key(job)

        return context, stuck


class StuckHarness(RotaHarness):
    def _build(self) -> tuple[Services, Engine]:
        store = Store(f"sqlite:///{self.path / 'db'}")
        policy = StuckRota(policy_config(self.config))
        services = build_services(
            store, self.config, self.clock, policy, monotonic=self.clock.monotonic
        )
        return services, Engine(services)


def test_a_dry_run_answers_while_a_pass_is_stuck_in_decide(tmp_path: Path) -> None:
    """``gsub --test-only`` decides on the core thread with a policy instance of its own, so
    it never waits for the pass running on the policy thread."""
    h = StuckHarness(tmp_path)
    h.connect("n1", gpus=2)
    queued = h.submit(gpus=1)
    policy = h.s.policy
    assert isinstance(policy, StuckRota)
    probe = SubmitItem(JobSpec(image="img", command=("true",), gpus=1))
    too_big = SubmitItem(JobSpec(image="img", command=("true",), gpus=2))

    async def scenario() -> tuple[list[SubmitResult], bool]:
        engine = h.engine
        stuck_pass = asyncio.create_task(engine.passes.run())
        try:
            assert await asyncio.to_thread(policy.inside.wait, 30), "the pass never started"
            answers = await asyncio.wait_for(
                engine.jobs.submit([probe, too_big], Principal("bob"), test_only=True), timeout=20
            )
            return answers, stuck_pass.done()
        finally:
            policy.release.set()
            await stuck_pass
            await engine.stop()

    (fits, waits), pass_done = asyncio.run(scenario())
    assert not pass_done, "the dry run answered while the pass was still deciding"
    assert fits.reason == "" and fits.job_ids == ()  # would start now, nothing stored
    assert waits.reason == "Resources"  # the queued job comes first
    assert h.state(queued) is JobState.CONFIGURING  # the pass finished once released
    assert [j.display_id for j in h.s.model.jobs.values()] == [queued]


def test_a_hold_shows_its_reason_at_once_and_a_plan_from_before_it_does_not_undo_it(
    tmp_path: Path,
) -> None:
    h = RotaHarness(tmp_path)
    h.connect("n1", gpus=1)
    h.submit(gpus=1)  # takes the only GPU
    waiting = h.submit(gpus=1)
    h.schedule()
    assert h.s.jobs.get(waiting)[0].reason == "Resources"
    snap = h.s.planner.snapshot()
    stale = h.s.policy.decide(snap)  # decided while the job was not held yet
    h.s.control.control("hold", [waiting], "root", admin=True)
    assert h.s.jobs.get(waiting)[0].reason == "JobHeldAdmin", "shown before any pass"
    h.s.planner.apply(stale)
    assert h.s.jobs.get(waiting)[0].reason == "JobHeldAdmin", "the stale plan left it"
    h.schedule()
    assert h.s.jobs.get(waiting)[0].reason == "JobHeldAdmin"
