"""High availability on a real PostgreSQL (tests/postgres.py) with real processes: two
schedulers with ``--ha`` on one database, one leading and one standing by; agents and clients
given both addresses.

- ``kill -9`` of the leader while 3 clients submit and jobs run: the standby leads within 10 s,
  every acknowledged job exists exactly once, running jobs keep their attempt, start and
  container.
- A leader stopped (SIGSTOP) until the standby took over cannot write once it runs again
  (SIGCONT), and exits; and, in one process, the fence refuses a deposed leader's commit.
- SQLite refuses ``--ha``.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from rota.jobspec import JobSpec
from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.core.users import UsersService
from rota.scheduler.store.lease import Fenced, Lease
from rota.scheduler.store.store import Store, open_engine
from rota.states import JobState
from tests.cluster import TEST_IMAGE, Cluster, free_port, wait_for
from tests.postgres import postgres_url  # noqa: F401  (fixture)

CLIENTS = 3
LEASE = "2"  # seconds: the standby takes over from a stopped leader this long after it froze


@pytest.fixture
def db_url(postgres_url: str) -> str:  # noqa: F811
    """A fresh database on the shared test PostgreSQL."""
    name = f"ha_{uuid.uuid4().hex[:10]}"
    admin = open_engine(postgres_url)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return postgres_url.rsplit("/", 1)[0] + f"/{name}"


class Pair:
    """Schedulers ``a`` and ``b`` with ``--ha`` on one database, in ``cluster``'s directory;
    the CLI (``cluster.cli``) is given both addresses."""

    def __init__(self, cluster: Cluster, db: str) -> None:
        self.cluster, self.db = cluster, db
        self.ports = {"a": free_port(), "b": free_port()}
        cluster.env_extra["ROTA_SCHEDULER"] = self.addresses
        config = cluster.root / "ha.yaml"
        config.write_text(
            f"heartbeat_interval: 0.5\ntick_interval: 0.5\nnode_timeout: 5\nha_lease: {LEASE}\n"
            f"allowed_mounts: [{cluster.root}]\n"
        )
        self.config = str(config)

    @property
    def addresses(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports.values())

    def start(self, key: str) -> subprocess.Popen[bytes]:
        args = ["scheduler", "--ha", "--db", self.db, "--config", self.config]
        args += [
            "--listen",
            f"127.0.0.1:{self.ports[key]}",
            "--http-listen",
            "",
            "--open-registration",
        ]
        return self.cluster.spawn(key, args)

    def leads(self, key: str) -> bool:
        return "listening on" in self.cluster.log(key)

    def admin(self) -> None:
        store = Store(self.db)
        try:
            self.cluster.token = UsersService(store.users, time.time).add("root", True)[1]
        finally:
            store.close()


@pytest.fixture
def pair(cluster: Cluster, db_url: str) -> Iterator[Pair]:
    """``a`` leading and ``b`` standing by, an admin token for the CLI."""
    ha = Pair(cluster, db_url)
    ha.start("a")
    wait_for(lambda: ha.leads("a"), 30, what="a leads")
    ha.start("b")
    wait_for(lambda: "standing by" in cluster.log("b"), 30, what="b stands by")
    ha.admin()
    yield ha


def test_kill_9_of_the_leader_while_clients_submit_and_jobs_run(pair: Pair) -> None:
    cluster = pair.cluster
    node = cluster.node_name("n1")
    cluster.start_agent("n1", 2, "--scheduler", pair.addresses, wait=False)
    wait_for(lambda: (n := cluster.node(node)) and n["state"] != "DOWN", 30, what="node up")
    long_job = f"image: {TEST_IMAGE}\ncommand: [sleep, '600']\nresources: {{gpus: 1}}\n"
    running = [cluster.submit(long_job) for _ in range(2)]
    before = {j: cluster.wait_state(j, "RUNNING") for j in running}
    containers = set(cluster.containers(all_states=False))
    assert len(containers) == 2

    acked: Counter[str] = Counter()  # job ids acknowledged to the clients
    names: dict[str, str] = {}  # job id -> the name its client gave it
    stop = threading.Event()
    count = [0]

    def client(number: int) -> None:
        quick = f"image: {TEST_IMAGE}\ncommand: ['true']\nresources: {{gpus: 0}}\n"
        while not stop.is_set():
            name = f"c{number}-{uuid.uuid4().hex[:6]}"
            path = cluster.write_job(f"{name}.yaml", quick + f"name: {name}\n")
            done = cluster.cli("gsub", "--parsable", str(path))
            if done.returncode == 0:
                job_id = done.stdout.strip().splitlines()[0]
                acked[job_id] += 1
                names[job_id] = name
                count[0] += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: count[0] >= 3, 60, what="submissions before the kill")
        cluster.kill("a", signal.SIGKILL)
        wait_for(lambda: pair.leads("b"), 10, interval=0.05, what="b leads within 10 s")
        after = count[0]
        wait_for(lambda: count[0] >= after + 3, 60, what="submissions after the take-over")
    finally:
        stop.set()
        for t in threads:
            t.join()

    jobs = cluster.jobs()
    listed = Counter(j["id"] for j in jobs)
    by_id = {j["id"]: j for j in jobs}
    for job_id in acked:
        assert acked[job_id] == 1 and listed[job_id] == 1, job_id
        assert by_id[job_id]["name"] == names[job_id]
    assert Counter(j["name"] for j in jobs if j["name"].startswith("c")).most_common(1)[0][1] == 1
    for job_id, was in before.items():
        now = cluster.wait_state(job_id, "RUNNING")
        assert (now["attempt"], now["start_time"]) == (was["attempt"], was["start_time"])
    assert set(cluster.containers(all_states=False)) >= containers
    wait_for(
        lambda: "listening on" in cluster.log("b") and cluster.node(node)["state"] != "DOWN",
        30,
        what="the agent back with b",
    )


def _health(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        return int(stub.Check(health_pb2.HealthCheckRequest(), timeout=10).status)


def test_a_standby_is_not_serving_and_names_the_leader(pair: Pair) -> None:
    cluster = pair.cluster
    a, b = (f"127.0.0.1:{pair.ports[k]}" for k in ("a", "b"))
    assert _health(a) == health_pb2.HealthCheckResponse.SERVING
    assert _health(b) == health_pb2.HealthCheckResponse.NOT_SERVING
    refused = subprocess.run(
        [sys.executable, "-m", "rota.cli.gqueue"],
        env={**cluster.env, "ROTA_SCHEDULER": b},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert f"this rota scheduler is a standby; the leader is at {a}" in refused.stderr
    standby_first = subprocess.run(
        [sys.executable, "-m", "rota.cli.gqueue"],
        env={**cluster.env, "ROTA_SCHEDULER": f"{b},{a}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert standby_first.returncode == 0, standby_first.stderr  # past the standby to the leader
    # a streamed reply (glogs) too: it named the leader and gave up, though given its address
    cluster.start_agent("n1", 1, "--scheduler", f"{b},{a}")
    job = cluster.submit(f"image: {TEST_IMAGE}\ncommand: [echo, hello]\n")
    cluster.wait_state(job, "COMPLETED")
    logs = subprocess.run(
        [sys.executable, "-m", "rota.cli.glogs", job],
        env={**cluster.env, "ROTA_SCHEDULER": f"{b},{a}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (logs.returncode, logs.stdout) == (0, "hello\n"), logs.stderr
    running = cluster.submit(f"image: {TEST_IMAGE}\ncommand: [sleep, '600']\n")
    cluster.wait_state(running, "RUNNING")
    attached = subprocess.run(
        [sys.executable, "-m", "rota.cli.gattach", running, "--", "echo", "in"],
        env={**cluster.env, "ROTA_SCHEDULER": f"{b},{a}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (attached.returncode, attached.stdout) == (0, "in\n"), attached.stderr


def test_a_stopped_leader_that_wakes_after_the_take_over_cannot_write(pair: Pair) -> None:
    cluster = pair.cluster
    cluster.procs["a"].send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: pair.leads("b"), 30, what="b leads")
        env = {**cluster.env, "ROTA_SCHEDULER": f"127.0.0.1:{pair.ports['a']}"}
        to_a = subprocess.Popen(  # a write that waits in a's socket while a is stopped
            [sys.executable, "-m", "rota.cli.gadmin", "node", "add", "late", "--parsable"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.5)
    finally:
        cluster.procs["a"].send_signal(signal.SIGCONT)
    out, err = to_a.communicate(timeout=120)
    assert "error" in err
    assert to_a.returncode != 0, out
    assert cluster.procs["a"].wait(timeout=30) == 75
    assert "no longer the leader" in cluster.log("a")
    cluster.cli("gadmin", "node", "add", "fresh", check=True)  # b leads and writes
    nodes = json.loads(cluster.cli("gadmin", "node", "list", "--json", check=True).stdout)
    names = {n["name"] for n in nodes}
    assert "fresh" in names and "late" not in names


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


def _sessions(url: str, application: str) -> int:
    engine = open_engine(url)
    try:
        with engine.connect() as conn:
            query = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :a")
            return int(conn.execute(query, {"a": application}).scalar_one())
    finally:
        engine.dispose()


def _advisory_locks(url: str) -> int:
    engine = open_engine(url)
    try:
        with engine.connect() as conn:
            query = text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())"
            )
            return int(conn.execute(query).scalar_one())
    finally:
        engine.dispose()


def test_the_fence_refuses_every_commit_of_a_deposed_leader(db_url: str) -> None:
    Store(db_url).close()  # the schema, with the lease row
    first = Lease(db_url, "first:9717", 0.2)
    assert first.take() == 1
    fenced: list[int] = []
    store = Store(db_url, first.fence(fenced.append))
    ((kept,),) = store.jobs.submit([[_job("kept")]], [""], "ann")
    second = Lease(db_url, "second:9717", 60)
    assert second.take() == 0  # the lease is fresh and the first holds the lock
    assert second.leader() == ("first:9717", 1)
    second.lease = 0.2  # from now on the first's lease lapses at once
    assert wait_for(second.take, 10, interval=0.05, what="the lease lapses") == 2
    # the new leader ended the first's database session: its next write finds it gone ...
    wait_for(lambda: not _sessions(db_url, "rota-leader-1"), 10, what="the session ended")
    with pytest.raises(OperationalError, match="terminating connection"):
        store.jobs.submit([[_job("late")]], [""], "ann")
    # ... and on a new connection the fence refuses it
    with pytest.raises(Fenced, match="led at epoch 1; epoch 2 leads now"):
        store.jobs.submit([[_job("later")]], [""], "ann")
    assert set(fenced) == {2}
    assert not first.renew()
    store.close()
    reader = Store(db_url)
    assert [j.name for j in reader.jobs.active()] == ["kept"]
    reader.close()
    first.close()
    second.close()
    assert kept.id


def test_sqlite_has_no_standby(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rota.cli.rota_main",
            "scheduler",
            "--ha",
            "--listen",
            "127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"XDG_DATA_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert "ha needs a PostgreSQL database_url" in done.stderr
    assert "SQLite serves one scheduler process only" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_free_lock_replaces_a_dead_leader_at_once_but_never_a_live_one(db_url: str) -> None:
    Store(db_url).close()
    first = Lease(db_url, "first:9717", 60)
    assert first.take() == 1  # it holds the advisory lock
    second = Lease(db_url, "second:9717", 60)
    assert second.take() == 0
    first.close()  # its process died: its connection, and the lock, are gone
    # as soon as the server has ended that session, though the lease (60 s) has not lapsed
    assert wait_for(second.take, 10, interval=0.05, what="the lock is free") == 2
    third = Lease(db_url, "third:9717", 0.2)  # second stops renewing (SIGSTOP) but holds the lock
    assert wait_for(third.take, 10, interval=0.05, what="the lease lapses") == 3
    assert third.renew()
    second.close()  # it woke up, found itself deposed and exited: the lock is free
    wait_for(lambda: _advisory_locks(db_url) == 0, 10, what="the lock is free")
    # a newcomer leaves it to third, which is alive and renewing: it stays the leader ...
    newcomer = Lease(db_url, "newcomer:9717", 60)
    assert newcomer.take() == 0
    assert _advisory_locks(db_url) == 0
    assert newcomer.leader() == ("third:9717", 3)
    assert third.renew()  # ... and its renewal takes the lock
    assert _advisory_locks(db_url) == 1
    third.close()  # so once third dies, the newcomer leads at once again
    assert wait_for(newcomer.take, 10, interval=0.05, what="the lock is free") == 4
    for lease in (first, third, newcomer):
        lease.close()


def test_a_take_over_goes_on_when_the_old_leaders_sessions_cannot_be_ended(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    Store(db_url).close()
    role = f"other_{uuid.uuid4().hex[:6]}"
    admin = open_engine(db_url)
    with admin.begin() as conn:  # not a superuser: it may not end the superuser's sessions
        conn.execute(text(f"CREATE ROLE {role} LOGIN"))
        conn.execute(text(f"GRANT SELECT, UPDATE ON leader TO {role}"))
    admin.dispose()
    first = Lease(db_url, "first:9717", 60)
    assert first.take() == 1
    store = Store(db_url, first.fence(lambda _epoch: None))
    store.jobs.submit([[_job("kept")]], [""], "ann")  # a pooled session named for epoch 1
    second = Lease(db_url.replace("rota@", f"{role}@", 1), "second:9717", 0.2)
    assert wait_for(second.take, 10, interval=0.05, what="the lease lapses") == 2
    assert "cannot end the deposed leader's database sessions" in caplog.text
    assert second.leader() == ("second:9717", 2)
    with pytest.raises(Fenced):
        store.jobs.submit([[_job("late")]], [""], "ann")
    store.close()
    for lease in (first, second):
        lease.close()


def test_a_standby_drops_a_connection_that_never_finishes_its_handshake(
    cluster: Cluster,
    db_url: str,
) -> None:
    """A standby has the leader's caps against connection floods: idle connections held open
    on it would otherwise use up the descriptors it needs to take over."""
    ha = Pair(cluster, db_url)
    with open(ha.config, "a") as config:
        config.write("handshake_timeout: 1\n")
    ha.start("a")
    wait_for(lambda: ha.leads("a"), 30, what="a leads")
    ha.start("b")
    wait_for(lambda: "standing by" in cluster.log("b"), 30, what="b stands by")
    with socket.create_connection(("127.0.0.1", ha.ports["b"]), timeout=30) as idle:
        assert _read_to_the_end(idle)


def _read_to_the_end(conn: socket.socket) -> bool:
    """Whether the peer closes ``conn`` (what it sends meanwhile is skipped) before the
    socket's timeout."""
    try:
        while conn.recv(4096):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return False
    return True


def test_a_lowered_connection_cap_is_logged_once(cluster: Cluster, db_url: str) -> None:
    """An HA scheduler built its server options twice (standing by, then leading), and said
    twice that the open-file limit lowers max_connections."""
    config = cluster.root / "many.yaml"
    config.write_text("max_connections: 100000000\n")
    args = ["scheduler", "--ha", "--db", db_url, "--config", str(config), "--http-listen", ""]
    cluster.spawn("one", [*args, "--listen", f"127.0.0.1:{free_port()}"])
    wait_for(lambda: "listening on" in cluster.log("one"), 30, what="it leads")
    assert cluster.log("one").count("is more than the open-file limit") == 1, cluster.log("one")
