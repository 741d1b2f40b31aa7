"""The schema's migrations (rota.scheduler.store.schema): an empty database and one made by rota
0.1 (tests/data/rota-0.1.sqlite, and its tables on PostgreSQL from rota-0.1-postgresql.sql)
reach the newest revision with their rows; the migrated schema and models.py agree (what
`alembic check` checks); downgrade and upgrade again; the scheduler refuses an older or a newer
revision. On SQLite and a real PostgreSQL (tests/postgres.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, MetaData, inspect, select, text

from rota.jobspec import JobSpec
from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.store import schema
from rota.scheduler.store.models import Base
from rota.scheduler.store.schema import SchemaError
from rota.scheduler.store.store import Store, open_engine
from rota.states import JobState
from tests.postgres import postgres_url  # noqa: F401  (fixture)

DATA = Path(__file__).parent / "data"
HEAD = "0008_idlehook"  # 0002: jobs.placed_partition; 0003: web sessions, unused bookings; 0004: admins' partitions, mails; 0005: booking mails; 0006: the HA lease; 0007: attained service; 0008: idle webhooks
NEXT = "0100"  # the next release of these tests
EXPAND = '''"""A test's expand step: a nullable column a running older scheduler never reads."""

import sqlalchemy as sa
from alembic import op

revision = "0100"
down_revision = "0008_idlehook"


def upgrade() -> None:
    op.add_column("jobs", sa.Column("comment", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("comment")
'''


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'db.sqlite'}"
        return
    base = request.getfixturevalue("postgres_url")
    name = f"m_{uuid.uuid4().hex[:10]}"
    admin = open_engine(base)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    yield base.rsplit("/", 1)[0] + f"/{name}"


def _differences(engine: Engine) -> list[object]:
    """What `alembic check` would report: the models against the database's schema."""
    with engine.connect() as conn:
        return list(compare_metadata(MigrationContext.configure(conn), Base.metadata))


def _job(name: str) -> JobRecord:
    return JobRecord(
        id=0,
        name=name,
        user="ann",
        account="ann",
        spec=JobSpec(image="img", command=("true",), gpus=1),
        state=JobState.PENDING,
        submit_time=1000.0,
        time_limit=60.0,
    )


def _load_rota_0_1(url: str, tmp_path: Path) -> None:
    """Make ``url`` (empty) what rota 0.1 left: on SQLite the fixture file itself; on
    PostgreSQL the DDL its create_all issued there, then the fixture's rows."""
    copy = tmp_path / "rota-0.1.sqlite"
    shutil.copy(DATA / "rota-0.1.sqlite", copy)
    if url.startswith("sqlite"):
        shutil.copy(copy, url.removeprefix("sqlite:///"))
        return
    fixture = open_engine(f"sqlite:///{copy}")
    old = MetaData()
    old.reflect(fixture)
    target = open_engine(url)
    with target.begin() as conn, fixture.connect() as source:
        conn.exec_driver_sql((DATA / "rota-0.1-postgresql.sql").read_text())
        for table in old.sorted_tables:
            rows = [dict(r._mapping) for r in source.execute(select(table))]
            if rows:
                conn.execute(table.insert(), rows)
        for name in ("jobs", "job_events", "audit"):
            conn.execute(
                text(
                    f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                    f"(SELECT max(id) FROM {name}))"
                )
            )
    target.dispose()
    fixture.dispose()


def test_an_empty_database_is_migrated_to_head_and_matches_the_models(db_url: str) -> None:
    store = Store(db_url)
    assert schema.status(store.engine).describe() == f"{HEAD} (head)"
    assert _differences(store.engine) == []
    store.jobs.submit([[_job("a")], [_job("b")]], ["", ""], "ann")
    store.close()
    again = Store(db_url)  # a restart: already at head, nothing is created again
    assert [j.name for j in again.jobs.active()] == ["a", "b"]
    again.close()


def test_a_database_made_by_rota_0_1_is_stamped_not_rebuilt(db_url: str, tmp_path: Path) -> None:
    _load_rota_0_1(db_url, tmp_path)
    engine = open_engine(db_url)
    assert schema.status(engine).describe().startswith("unversioned (made by rota 0.1")
    with pytest.raises(SchemaError, match=r"at schema revision 0001 .*run `rota db upgrade`"):
        Store(db_url)  # stamped 0001, then refused: partitions (0002) need an upgrade
    assert schema.upgrade(engine).current == HEAD
    assert "placed_partition" in {c["name"] for c in inspect(engine).get_columns("jobs")}
    engine.dispose()
    store = Store(db_url)
    assert schema.status(store.engine).current == HEAD
    assert _differences(store.engine) == []
    assert [j.display_id for j in store.jobs.active()] == ["1", "2_0", "2_1", "2_2"]
    assert store.users.user("ann") is not None
    assert [n.name for n in store.nodes.all()] == ["gpu01"]
    assert [r.name for r in store.reservations.current(0.0)] == ["maint"]
    ((new,),) = store.jobs.submit([[_job("after")]], [""], "ann")
    assert new.id == 5  # ids go on from rota 0.1's
    store.close()


def test_a_database_missing_rota_0_1_tables_is_refused_not_stamped(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    engine = open_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE jobs (id INTEGER PRIMARY KEY)"))
    engine.dispose()
    with pytest.raises(SchemaError, match=r"lacks what rota 0\.1 made \(arrays, audit, .*"):
        Store(url)


def test_downgrade_to_base_needs_drop_all_then_upgrade_again(db_url: str) -> None:
    Store(db_url).close()
    engine = open_engine(db_url)
    with pytest.raises(SchemaError, match=r"drops every table.*--drop-all"):
        schema.downgrade(engine, "base")
    with pytest.raises(SchemaError, match="--drop-all"):
        schema.downgrade(engine, "-8")  # 0008 -> 0007 -> 0006 -> ... -> 0001 -> base
    with pytest.raises(SchemaError, match="--drop-all"):
        schema.downgrade(engine, f"{schema.BASELINE}-1")  # Alembic's REV-N form
    assert schema.downgrade(engine, "base", drop_all=True).current is None
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    assert schema.upgrade(engine).current == HEAD
    assert _differences(engine) == []
    engine.dispose()


def _next_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, this process runs the next release: the shipped migrations plus 0004."""
    shipped = Path(schema.__file__).parent / "migrations"
    scripts = tmp_path / "next-release-migrations"
    shutil.copytree(shipped, scripts, ignore=shutil.ignore_patterns("__pycache__"))
    (scripts / "versions" / "0100_comment.py").write_text(EXPAND)
    monkeypatch.setattr(schema, "SCRIPTS", str(scripts))


def test_an_older_revision_is_refused_until_rota_db_upgrade(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(db_url)
    store.jobs.submit([[_job("kept")]], [""], "ann")
    store.close()
    _next_release(tmp_path, monkeypatch)
    with pytest.raises(SchemaError) as refused:
        Store(db_url)
    assert str(refused.value).startswith(
        f"the database is at schema revision {HEAD} and this rota needs {NEXT}: "
        "run `rota db upgrade`"
    )
    engine = open_engine(db_url)
    assert schema.upgrade(engine).describe() == f"{NEXT} (head)"
    assert "comment" in {c["name"] for c in inspect(engine).get_columns("jobs")}
    assert schema.downgrade(engine, "-1").current == HEAD  # one step: no --drop-all needed
    assert schema.upgrade(engine).current == NEXT
    engine.dispose()
    store = Store(db_url)
    assert [j.name for j in store.jobs.active()] == ["kept"]
    store.close()


def _rota(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rota.cli.rota_main", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_newer_revision_is_refused_naming_both(db_url: str) -> None:
    Store(db_url).close()
    engine = open_engine(db_url)
    with engine.begin() as conn:  # what the next release's `rota db upgrade` leaves
        conn.execute(text(f"UPDATE alembic_version SET version_num = '{NEXT}'"))
    engine.dispose()
    started = _rota("scheduler", "--db", db_url, "--listen", "127.0.0.1:0", "--http-listen", "")
    assert started.returncode == 1
    assert started.stderr.strip().splitlines()[-1] == (
        f"rota scheduler: error: the database is at schema revision {NEXT}, newer than this rota "
        f"knows (its newest is {HEAD}): run the rota that upgraded it, or downgrade the "
        f"database with that rota's `rota db downgrade {HEAD}`"
    )
    current = _rota("db", "current", "--db", db_url)
    assert (current.returncode, current.stdout) == (
        0,
        f"{NEXT} (newer than this rota, whose newest is {HEAD})\n",
    )
    upgraded = _rota("db", "upgrade", "--db", db_url)
    assert upgraded.returncode == 1 and "newer than this rota knows" in upgraded.stderr


def test_rota_db_upgrade_stamps_a_rota_0_1_database(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.db"
    shutil.copy(DATA / "rota-0.1.sqlite", path)
    url = f"sqlite:///{path}"
    before = _rota("db", "current", "--db", url)
    assert before.stdout.startswith("unversioned (made by rota 0.1")
    done = _rota("db", "upgrade", "--db", url)
    assert (done.returncode, done.stdout) == (0, f"{HEAD} (head)\n")
    refused = _rota("db", "downgrade", "base", "--db", url)
    assert refused.returncode == 1 and "--drop-all" in refused.stderr
    store = Store(url)
    assert len(store.jobs.active()) == 4
    store.close()
