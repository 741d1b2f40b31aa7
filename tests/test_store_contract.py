"""One contract test suite for the storage interface, run against SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import select, text

from rota.gpus import GpuInfo
from rota.jobspec import JobSpec
from rota.messages import Inventory
from rota.scheduler.cluster.model import JobEvent, JobRecord, NodeAlloc, NodeState
from rota.scheduler.store.models import ArrayRow, Base, JobRow
from rota.scheduler.store.store import JobQuery, Store
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
    admin = Store(base)
    with admin.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.close()
    yield base.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    yield s
    s.close()


def test_ids_increase_and_survive_a_new_store(store: Store, store_url: str) -> None:
    (a,), (b,) = store.submit([[_job("a")], [_job("b")]], ["", ""], "ann")
    assert b.id > a.id > 0
    again = Store(store_url)
    assert [j.name for j in again.active_jobs()] == ["a", "b"]
    (c,) = again.submit([[_job("c")]], [""], "ann")[0]
    assert c.id > b.id
    again.close()


def test_request_ids_are_recorded_with_the_jobs(store: Store) -> None:
    stored = store.submit([[_job()], [_job(task=0), _job(task=1)]], ["req-1", "req-2"], "ann")
    array_id = stored[1][0].id
    assert [j.display_id for j in stored[1]] == [f"{array_id}_0", f"{array_id}_1"]
    known = store.known_requests(["req-1", "req-2", "req-3"])
    assert known == {"req-1": [str(stored[0][0].id)], "req-2": [f"{array_id}_0", f"{array_id}_1"]}


def test_save_updates_state_allocation_and_events(store: Store) -> None:
    (job,) = store.submit([[_job()]], [""], "ann")[0]
    job = replace(
        job,
        state=JobState.RUNNING,
        attempt=1,
        start_time=1001.0,
        allocation=[NodeAlloc("n1", (0, 1), ("GPU-a", "GPU-b"), 2.0, 1024)],
    )
    store.save([job], [JobEvent(job.id, 1001.0, 1, "PENDING", "RUNNING", "started")])
    (loaded,) = store.active_jobs()
    assert loaded.state is JobState.RUNNING and loaded.attempt == 1
    assert loaded.allocation == [NodeAlloc("n1", (0, 1), ("GPU-a", "GPU-b"), 2.0, 1024)]
    done = replace(loaded, state=JobState.COMPLETED, exit_code=0, end_time=1005.0)
    store.save([done])
    assert store.active_jobs() == []
    assert [e.new_state for e in store.events(job.id)] == ["PENDING", "RUNNING"]
    assert store.job_states([job.id]) == {job.id: JobState.COMPLETED}


def test_query_filters(store: Store) -> None:
    stored = store.submit(
        [[_job(user="ann")], [_job(user="bob")], [_job(user="bob")]], ["", "", ""], "x"
    )
    ids = [g[0].id for g in stored]
    store.save([replace(stored[2][0], state=JobState.FAILED, exit_code=3)])
    assert [j.id for j in store.query_jobs(JobQuery(users=("bob",)))] == ids[1:]
    assert [j.id for j in store.query_jobs(JobQuery(states=(JobState.PENDING,)))] == ids[:2]
    assert [j.id for j in store.query_jobs(JobQuery(after_id=ids[0], limit=1))] == [ids[1]]
    assert [j.id for j in store.query_jobs(JobQuery(ids=(ids[2],)))] == [ids[2]]


def test_ended_jobs_since(store: Store) -> None:
    stored = store.submit(
        [[_job("old")], [_job("new")], [_job("never")], [_job("live")]], [""] * 4, "x"
    )
    old, new, never, live = (g[0] for g in stored)
    store.save(
        [
            replace(old, state=JobState.COMPLETED, start_time=100.0, end_time=200.0),
            replace(new, state=JobState.FAILED, start_time=900.0, end_time=1000.0),
            replace(never, state=JobState.CANCELLED, end_time=1000.0),
            replace(live, state=JobState.RUNNING, start_time=950.0),
        ]
    )
    assert [j.name for j in store.ended_jobs(0.0)] == ["old", "new"]
    assert [j.name for j in store.ended_jobs(500.0)] == ["new"]


def test_nodes_round_trip(store: Store) -> None:
    node = NodeState(
        name="gpu01",
        token_hash="abc",
        labels={"rack": "a"},
        inventory=Inventory(gpus=(GpuInfo(0, "GPU-x", "A100", 80 * 2**30),), cpus=64.0),
    )
    store.save_node(node)
    (loaded,) = store.nodes()
    assert loaded.name == "gpu01" and loaded.token_hash == "abc" and loaded.labels == {"rack": "a"}
    assert loaded.inventory.gpus[0].uuid == "GPU-x" and loaded.inventory.cpus == 64.0
    store.delete_node("gpu01")
    assert store.nodes() == []


def test_schema_is_created_once(store: Store, store_url: str) -> None:
    Base.metadata.create_all(store.engine)  # idempotent: a restarted scheduler does this
    assert Store(store_url).active_jobs() == []


def test_an_array_is_stored_once_and_its_tasks_found_by_index(store: Store) -> None:
    task_ids = list(range(0, 300, 3))
    (stored,) = store.submit([[_job(task=t) for t in task_ids]], [""], "ann")
    array_id = stored[0].id
    assert [j.display_id for j in stored] == [f"{array_id}_{t}" for t in task_ids]
    with store.engine.connect() as conn:
        assert conn.execute(select(ArrayRow.id)).scalars().all() == [array_id]
        assert all(spec == {} for spec in conn.execute(select(JobRow.spec)).scalars())
    (task,) = store.query_jobs(JobQuery(named=((array_id, 9),)))
    assert task.display_id == f"{array_id}_9" and task.spec == _job().spec
    every = store.query_jobs(JobQuery(named=((array_id, None),)))
    assert len(every) == len(task_ids) and every[0].spec is every[-1].spec
    (history,) = [e.reason for e in store.events(task.id)]
    assert history == "submitted by ann (array of 100 tasks)"
