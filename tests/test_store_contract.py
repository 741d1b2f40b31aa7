"""One contract suite for every storage repository (jobs, notices, nodes, usage, users and
audit, reservations, web sessions), run against SQLite and a real PostgreSQL (tests/postgres.py; CI fails
rather than skips when PostgreSQL is missing)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import select, text

from rota.gpus import GpuInfo, GpuLink
from rota.jobspec import JobSpec, Mount
from rota.messages import Inventory
from rota.scheduler.cluster.accounting import AccountingQuery, JobUsage
from rota.scheduler.cluster.gpus import GpuMark
from rota.scheduler.cluster.model import (
    AdminState,
    HistoryKind,
    JobEvent,
    JobRecord,
    NodeAlloc,
    NodeState,
)
from rota.scheduler.cluster.reservation import Reservation
from rota.scheduler.cluster.users import AuditEntry, UserRecord
from rota.scheduler.store.models import ArrayRow, JobRow
from rota.scheduler.store.protocols import (
    DuplicateRequest,
    JobQuery,
    SessionLimits,
    StoredSession,
    WindowUsage,
)
from rota.scheduler.store.store import Store, open_engine
from rota.states import JobState
from tests.postgres import postgres_url  # noqa: F401  (fixture)


def _job(name: str = "j", user: str = "ann", task: int | None = None) -> JobRecord:
    return JobRecord(
        id=0,
        name=name,
        user=user,
        account=user,
        spec=JobSpec(image="img", command=("true",), gpus=1),
        state=JobState.PENDING,
        submit_time=1000.0,
        time_limit=60.0,
        array_task_id=task,
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'db.sqlite'}"
        return
    base = request.getfixturevalue("postgres_url")
    name = f"t_{uuid.uuid4().hex[:10]}"
    admin = open_engine(base)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    yield base.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    yield s
    s.close()


def test_ids_increase_and_survive_a_new_store(store: Store, store_url: str) -> None:
    (a,), (b,) = store.jobs.submit([[_job("a")], [_job("b")]], ["", ""], "ann")
    assert b.id > a.id > 0
    again = Store(store_url)
    assert [j.name for j in again.jobs.active()] == ["a", "b"]
    (c,) = again.jobs.submit([[_job("c")]], [""], "ann")[0]
    assert c.id > b.id
    again.close()


def test_request_ids_are_recorded_with_the_jobs(store: Store) -> None:
    stored = store.jobs.submit([[_job()], [_job(task=0), _job(task=1)]], ["req-1", "req-2"], "ann")
    array_id = stored[1][0].id
    assert [j.display_id for j in stored[1]] == [f"{array_id}_0", f"{array_id}_1"]
    known = store.jobs.known_requests(["req-1", "req-2", "req-3"])
    assert known == {"req-1": [str(stored[0][0].id)], "req-2": [f"{array_id}_0", f"{array_id}_1"]}


def test_save_updates_state_allocation_and_events(store: Store) -> None:
    (job,) = store.jobs.submit([[_job()]], [""], "ann")[0]
    job = replace(
        job,
        state=JobState.RUNNING,
        attempt=1,
        start_time=1001.0,
        allocation=[NodeAlloc("n1", (0, 1), ("GPU-a", "GPU-b"), 2.0, 1024)],
    )
    store.jobs.save([job], [JobEvent(job.id, 1001.0, 1, "PENDING", "RUNNING", "started")])
    (loaded,) = store.jobs.active()
    assert loaded.state is JobState.RUNNING and loaded.attempt == 1
    assert loaded.allocation == [NodeAlloc("n1", (0, 1), ("GPU-a", "GPU-b"), 2.0, 1024)]
    done = replace(loaded, state=JobState.COMPLETED, exit_code=0, end_time=1005.0)
    store.jobs.save([done])
    assert store.jobs.active() == []
    assert [e.new_state for e in store.jobs.events(job.id)] == ["PENDING", "RUNNING"]
    (ended,) = store.jobs.query(JobQuery(ids=(job.id,)))
    assert ended.state is JobState.COMPLETED and ended.exit_code == 0


def test_attained_service_and_preemptions_survive_a_requeue(store: Store) -> None:
    (job,) = store.jobs.submit([[_job()]], [""], "ann")[0]
    requeued = replace(job, attempt=1, attained=7200.0, preempted_at=(1000.0, 2000.0))
    store.jobs.save([requeued])
    (loaded,) = store.jobs.active()
    assert (loaded.attained, loaded.preempted_at) == (7200.0, (1000.0, 2000.0))


def test_query_filters(store: Store) -> None:
    stored = store.jobs.submit(
        [[_job(user="ann")], [_job(user="bob")], [_job(user="bob")]], ["", "", ""], "x"
    )
    ids = [g[0].id for g in stored]
    store.jobs.save([replace(stored[2][0], state=JobState.FAILED, exit_code=3)])
    assert [j.id for j in store.jobs.query(JobQuery(users=("bob",)))] == ids[1:]
    assert [j.id for j in store.jobs.query(JobQuery(states=(JobState.PENDING,)))] == ids[:2]
    assert [j.id for j in store.jobs.query(JobQuery(after_id=ids[0], limit=1))] == [ids[1]]
    assert [j.id for j in store.jobs.query(JobQuery(ids=(ids[2],)))] == [ids[2]]


def test_ended_jobs_since(store: Store) -> None:
    stored = store.jobs.submit(
        [[_job("old")], [_job("new")], [_job("never")], [_job("live")]], [""] * 4, "x"
    )
    old, new, never, live = (g[0] for g in stored)
    store.jobs.save(
        [
            replace(old, state=JobState.COMPLETED, start_time=100.0, end_time=200.0),
            replace(new, state=JobState.FAILED, start_time=900.0, end_time=1000.0),
            replace(never, state=JobState.CANCELLED, end_time=1000.0),
            replace(live, state=JobState.RUNNING, start_time=950.0),
        ]
    )
    assert [j.name for j in store.jobs.ended(0.0)] == ["old", "new"]
    assert [j.name for j in store.jobs.ended(500.0)] == ["new"]


def test_nodes_round_trip(store: Store) -> None:
    node = NodeState(
        name="gpu01",
        token_hash="abc",
        labels={"rack": "a"},
        inventory=Inventory(gpus=(GpuInfo(0, "GPU-x", "A100", 80 * 2**30),), cpus=64.0),
    )
    store.nodes.save(node)
    (loaded,) = store.nodes.all()
    assert loaded.name == "gpu01" and loaded.token_hash == "abc" and loaded.labels == {"rack": "a"}
    assert loaded.inventory.gpus[0].uuid == "GPU-x" and loaded.inventory.cpus == 64.0
    store.nodes.delete("gpu01")
    assert store.nodes.all() == []


def test_schema_is_created_once(store: Store, store_url: str) -> None:
    store.jobs.submit([[_job("kept")]], [""], "ann")
    again = Store(store_url)  # a restarted scheduler: the schema is at head, nothing recreated
    assert [j.name for j in again.jobs.active()] == ["kept"]
    again.close()


def test_an_array_is_stored_once_and_its_tasks_found_by_index(store: Store) -> None:
    task_ids = list(range(0, 300, 3))
    (stored,) = store.jobs.submit([[_job(task=t) for t in task_ids]], [""], "ann")
    array_id = stored[0].id
    assert [j.display_id for j in stored] == [f"{array_id}_{t}" for t in task_ids]
    with store.engine.connect() as conn:
        assert conn.execute(select(ArrayRow.id)).scalars().all() == [array_id]
        assert all(spec == {} for spec in conn.execute(select(JobRow.spec)).scalars())
    (task,) = store.jobs.query(JobQuery(named=((array_id, 9),)))
    assert task.display_id == f"{array_id}_9" and task.spec == _job().spec
    every = store.jobs.query(JobQuery(named=((array_id, None),)))
    assert len(every) == len(task_ids) and every[0].spec is every[-1].spec
    (history,) = [e.reason for e in store.jobs.events(task.id)]
    assert history == "submitted by ann (array of 100 tasks)"


def test_a_spec_and_an_inventory_read_back_as_written(store: Store) -> None:
    spec = JobSpec(
        image="img",
        command=("python", "train.py"),
        gpus=2,
        mounts=(Mount("/data", "/data", True),),
        env={"A": "1"},
        node_selector={"rack": "a"},
        notify_on=("end",),
        notify_url="http://127.0.0.1:9/hook",
        checkpointable=True,
        signal="USR1@120",
    )
    (job,) = store.jobs.submit([[replace(_job(), spec=spec)]], [""], "ann")[0]
    (loaded,) = store.jobs.active()
    assert loaded.id == job.id and loaded.spec == spec
    inventory = Inventory(
        gpus=(GpuInfo(0, "GPU-a", "H100", 80 * 2**30, "0000:01:00.0", "9.0"),),
        links=(GpuLink(0, 1, "NV4", True),),
        driver_version="550",
        cpus=32.0,
        memory=2**40,
        labels={"zone": "b"},
        gpu_mode="nvidia",
    )
    node = NodeState(name="n1", inventory=inventory, admin_state=AdminState.DRAIN, reason="x")
    store.nodes.save(node)
    (stored,) = store.nodes.all()
    assert stored.inventory == inventory and stored.admin_state is AdminState.DRAIN


def test_a_concurrent_duplicate_request_id_stores_nothing(store: Store) -> None:
    store.jobs.submit([[_job("first")]], ["req"], "ann")
    with pytest.raises(DuplicateRequest):
        store.jobs.submit([[_job("again")], [_job("other")]], ["", "req"], "ann")
    assert [j.name for j in store.jobs.active()] == ["first"]


def test_reasons_are_written_later_and_only_for_pending_jobs(store: Store, store_url: str) -> None:
    (a,), (b,) = store.jobs.submit([[_job("a")], [_job("b")]], ["", ""], "ann")
    store.jobs.save([replace(b, state=JobState.RUNNING, start_time=1001.0)])
    store.jobs.write_reasons([(a.id, "Resources"), (b.id, "Priority")])
    store.close()  # finishes the background writes
    again = Store(store_url)
    try:
        reasons = {j.name: j.reason for j in again.jobs.active()}
    finally:
        again.close()
    assert reasons == {"a": "Resources", "b": ""}


def test_gpu_marks_are_replaced_per_node(store: Store) -> None:
    store.nodes.save(NodeState(name="n1"))
    store.nodes.save_gpu_marks("n1", [GpuMark(0, "GPU-a", "xid 79", 5.0, "admin")])
    store.nodes.save_gpu_marks("n2", [GpuMark(1, "GPU-b", "ecc", 6.0)])
    store.nodes.save_gpu_marks("n1", [GpuMark(2, "GPU-c", "r" * 600, 7.0)])
    marks = store.nodes.gpu_marks()
    assert sorted(marks) == ["n1", "n2"]
    (mark,) = marks["n1"]
    assert (mark.index, mark.uuid, len(mark.reason), mark.since) == (2, "GPU-c", 512, 7.0)
    store.nodes.save_gpu_marks("n1", [])
    assert list(store.nodes.gpu_marks()) == ["n2"]


def _ended(store: Store, name: str, user: str, end: float) -> JobRecord:
    (job,) = store.jobs.submit([[_job(name, user=user)]], [""], user)[0]
    done = replace(job, state=JobState.COMPLETED, exit_code=0, start_time=end - 10, end_time=end)
    store.jobs.save([done])
    return done


def test_usage_is_listed_with_finished_jobs_and_purged_with_them(store: Store) -> None:
    old = _ended(store, "old", "ann", 100.0)
    new = _ended(store, "new", "bob", 900.0)
    store.jobs.submit([[_job("live")]], [""], "ann")
    store.usage.save([JobUsage(old.id, 50.0, 1, 10, 100), JobUsage(new.id, 10.0, 2, 5, 100)])
    store.usage.save([JobUsage(new.id, 180.0, 2, 7, 100)])  # replaces
    finished = store.usage.finished(AccountingQuery())
    assert [(f.job.name, f.usage.util_sum, f.usage.memory_peak) for f in finished] == [
        ("new", 180.0, 7),
        ("old", 50.0, 10),
    ]
    assert [f.job.name for f in store.usage.finished(AccountingQuery(principal="ann"))] == ["old"]
    assert [f.job.name for f in store.usage.finished(AccountingQuery(start=500.0))] == ["new"]
    assert store.usage.purge_ended(500.0) == 1
    assert [f.job.name for f in store.usage.finished(AccountingQuery())] == ["new"]
    assert store.jobs.events(old.id) == []
    assert [j.name for j in store.jobs.active()] == ["live"]


def test_purging_an_array_forgets_its_spec_with_its_last_task(store: Store) -> None:
    (tasks,) = store.jobs.submit([[_job(task=0), _job(task=1)]], [""], "ann")
    store.jobs.save([replace(tasks[0], state=JobState.CANCELLED, end_time=10.0)])
    assert store.usage.purge_ended(100.0) == 1
    with store.engine.connect() as conn:
        assert conn.execute(select(ArrayRow.id)).scalars().all() == [tasks[0].id]
    (rest,) = store.jobs.active()
    assert rest.spec == _job().spec
    store.jobs.save([replace(rest, state=JobState.CANCELLED, end_time=20.0)])
    assert store.usage.purge_ended(100.0) == 1
    with store.engine.connect() as conn:
        assert conn.execute(select(ArrayRow.id)).scalars().all() == []


def test_a_webhook_is_queued_once_leased_retried_and_done(store: Store) -> None:
    spec = replace(_job().spec, notify_url="http://127.0.0.1:9/hook", notify_on=("fail",))
    (job,) = store.jobs.submit([[replace(_job(), spec=spec)]], [""], "ann")[0]
    ended = replace(job, state=JobState.FAILED, exit_code=1, end_time=2000.0)
    store.jobs.save([ended])
    store.jobs.save([ended])  # a job ends once: one webhook
    assert store.notices.claim(1999.0, 30.0, 10) == []
    (notice,) = store.notices.claim(2000.0, 30.0, 10)
    assert (notice.job.id, notice.url, notice.tries) == (job.id, spec.notify_url, 0)
    assert store.notices.claim(2010.0, 30.0, 10) == []  # leased
    event = JobEvent(job.id, 2010.0, 0, "", "", "webhook failed", HistoryKind.WARNING)
    store.notices.retry(job.id, 1, 2100.0, event)
    assert store.notices.claim(2099.0, 30.0, 10) == []
    (again,) = store.notices.claim(2100.0, 30.0, 10)
    assert again.tries == 1
    store.notices.done(job.id, replace(event, reason="delivered", kind=HistoryKind.INFO))
    assert store.notices.claim(9999.0, 30.0, 10) == []
    assert [e.reason for e in store.jobs.events(job.id)][-2:] == ["webhook failed", "delivered"]


def test_idle_webhooks_go_one_at_a_time_in_order_and_before_the_end(store: Store) -> None:
    spec = replace(_job().spec, notify_url="http://127.0.0.1:9/hook", notify_on=("idle", "cancel"))
    (job,) = store.jobs.submit([[replace(_job(), spec=spec)]], [""], "ann")[0]
    quiet = replace(job, spec=replace(spec, notify_on=("fail",)))

    def idle(event: str, at: float) -> JobEvent:
        body = f'{{"event": "{event}"}}'
        return JobEvent(job.id, at, 1, "RUNNING", "RUNNING", event, HistoryKind.WARNING, body)

    store.jobs.save([quiet], [idle("idle_warning", 900.0)])  # its notify wants no idle ones
    assert store.notices.claim(9999.0, 30.0, 10) == []
    store.jobs.save([job], [idle("idle_warning", 1000.0), idle("idle_end", 1001.0)])
    store.jobs.save([replace(job, state=JobState.CANCELLED, end_time=1002.0)])
    assert [e.reason for e in store.jobs.events(job.id)][-2:] == ["idle_warning", "idle_end"]
    (first,) = store.notices.claim(2000.0, 30.0, 10)  # one at a time, the first queued
    assert (first.event, first.tries) == ("idle_warning", 0)
    assert first.body == '{"event": "idle_warning"}'
    assert store.notices.claim(2000.0, 30.0, 10) == []  # leased; the others wait for it
    done = JobEvent(job.id, 2001.0, 1, "", "", "delivered", HistoryKind.INFO)
    store.notices.done(job.id, done, first.webhook_id)
    (second,) = store.notices.claim(2001.0, 30.0, 10)
    assert second.event == "idle_end"
    store.notices.retry(job.id, 1, 2100.0, done, second.webhook_id)
    assert store.notices.claim(2050.0, 30.0, 10) == []  # the end waits for it
    assert store.notices.claim(2100.0, 30.0, 10)[0].tries == 1
    store.notices.done(job.id, done, second.webhook_id)
    (end,) = store.notices.claim(2200.0, 30.0, 10)
    assert (end.webhook_id, end.job.state) == (0, JobState.CANCELLED)
    assert store.usage.purge_ended(9999.0) == 1  # queued webhooks go with the job


def test_users_round_trip_and_are_found_by_token_hash(store: Store) -> None:
    ann = UserRecord("ann", accounts=("ml", "cv"), default_account="ml", uid=1000, gid=100)
    store.users.save(replace(ann, token_hash="h1", created=5.0))
    store.users.save(UserRecord("bob", admin=True, token_hash="h2"))
    assert [u.name for u in store.users.users()] == ["ann", "bob"]
    assert store.users.user("ann") == replace(ann, token_hash="h1", created=5.0)
    assert store.users.user("nobody") is None
    assert store.users.by_token_hash("h2") == UserRecord("bob", admin=True, token_hash="h2")
    assert store.users.by_token_hash("") is None
    store.users.save(replace(ann, token_hash="h3", revoked=True))  # replaces
    assert store.users.by_token_hash("h1") is None
    assert store.users.by_token_hash("h3") == replace(ann, token_hash="h3", revoked=True)


def test_the_audit_log_keeps_the_newest_and_prunes_the_old(store: Store) -> None:
    for t in range(5):
        store.users.record(AuditEntry(float(t), "ann", "drain", f"n{t}", "127.0.0.1", t % 2 == 0))
    assert [e.target for e in store.users.audit(limit=2)] == ["n3", "n4"]
    assert [e.target for e in store.users.audit(since=3.0)] == ["n3", "n4"]
    (first,) = store.users.audit(limit=5)[:1]
    assert first == AuditEntry(0.0, "ann", "drain", "n0", "127.0.0.1", True)
    assert store.users.prune_audit(2.0) == 2
    assert [e.target for e in store.users.audit()] == ["n2", "n3", "n4"]


def test_reservations_round_trip_and_end(store: Store) -> None:
    r = Reservation(
        "maint",
        100.0,
        200.0,
        {"n1": (0, 1), "n2": (3,)},
        users=("ann",),
        accounts=("ml",),
        flags=("maint",),
        lend=False,
        created_by="root",
        created_at=50.0,
    )
    store.reservations.save(r)
    store.reservations.save(replace(r, name="early", start=10.0, end=150.0))
    assert store.reservations.exists("maint") and not store.reservations.exists("other")
    assert store.reservations.current(0.0) == [replace(r, name="early", start=10.0, end=150.0), r]
    assert store.reservations.current(150.0) == [r]  # a window ended at 150 is gone
    store.reservations.save(replace(r, end=300.0))  # replaces
    assert [x.end for x in store.reservations.current(0.0)] == [150.0, 300.0]
    store.reservations.delete("maint")
    store.reservations.delete("maint")  # deleting what is gone is no error
    assert [x.name for x in store.reservations.current(0.0)] == ["early"]


def _login(key: str, user: str, at: float, token: str = "t") -> StoredSession:
    return StoredSession(key, user, f"hash-of-{token}", at, at)


def test_web_sessions_are_found_touched_closed_and_expire(store: Store) -> None:
    keep = SessionLimits(seen_after=0.0, created_after=0.0, per_user=4, total=10)
    assert store.web_sessions.open(_login("a1", "ann", 100.0), keep) == []
    assert store.web_sessions.find("a1") == _login("a1", "ann", 100.0)
    assert store.web_sessions.find("nope") is None
    store.web_sessions.touch("a1", 150.0)
    assert store.web_sessions.find("a1") == replace(_login("a1", "ann", 100.0), seen=150.0)
    store.web_sessions.open(_login("b1", "bob", 120.0), keep)
    # a later login forgets sessions idle since before 140 or made before 110
    later = SessionLimits(seen_after=140.0, created_after=110.0, per_user=4, total=10)
    assert store.web_sessions.open(_login("c1", "cy", 200.0), later) == []
    assert store.web_sessions.find("a1") is None  # made at 100: past its lifetime
    assert store.web_sessions.find("b1") is None  # last seen at 120: idle too long
    store.web_sessions.close("c1")
    store.web_sessions.close("c1")  # closing what is gone is no error
    assert store.web_sessions.find("c1") is None


def test_web_sessions_keep_the_per_user_cap_and_refuse_beyond_the_total(store: Store) -> None:
    limits = SessionLimits(seen_after=0.0, created_after=0.0, per_user=2, total=4)
    for i in range(2):
        assert store.web_sessions.open(_login(f"m{i}", "mal", 10.0 + i), limits) == []
    # a third login of one user ends that user's oldest, never another user's
    assert store.web_sessions.open(_login("m2", "mal", 20.0), limits) == ["m0"]
    store.web_sessions.open(_login("b0", "bob", 21.0), limits)
    store.web_sessions.open(_login("c0", "cy", 22.0), limits)
    assert store.web_sessions.open(_login("d0", "dee", 23.0), limits) is None  # all 4 taken
    assert store.web_sessions.find("d0") is None
    # with every session taken, a user who holds some makes room among their own
    assert store.web_sessions.open(_login("b1", "bob", 24.0), limits) == ["b0"]
    assert [store.web_sessions.find(k) is not None for k in ("m1", "m2", "b1", "c0")] == [True] * 4


def test_ended_windows_are_summed_as_booked_but_unused_per_user(store: Store) -> None:
    def window(user: str, end: float, booked: float, used: float) -> WindowUsage:
        return WindowUsage("lab", user, end - 10.0, end, booked, used, 0.0, 0.0)

    store.reservations.record_usage(
        [window("ann", 100.0, 80.0, 30.0), window("ann", 200.0, 40.0, 0.0)]
    )
    store.reservations.record_usage([window("bob", 150.0, 20.0, 20.0)])
    assert store.reservations.booked_unused(0.0, 0.0) == {"ann": 90.0, "bob": 0.0}
    assert store.reservations.booked_unused(120.0, 0.0) == {"ann": 40.0, "bob": 0.0}
    assert store.reservations.booked_unused(0.0, 160.0) == {"ann": 50.0, "bob": 0.0}
