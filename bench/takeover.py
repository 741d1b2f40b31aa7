"""Benchmark: high availability on PostgreSQL (docs/admin.md "Failover").

1. Take-over time: two schedulers with ``--ha`` and default settings on one database; the
   leader is killed with SIGKILL and the time until the standby answers health SERVING is
   measured; the killed one is started again (it stands by) and the next round kills the other.
   Median of N rounds (default 10). Then the same after SIGSTOP of the leader (its process and
   connections stay: the lease has to lapse), median of N/2 rounds.
2. The cost of fencing on a submission: p50 and p90 of SubmitJobs (one held job per call, over
   gRPC, sequential) to a scheduler on PostgreSQL without ``--ha``, and with it, the calls
   alternating between the two; and the same for the store's own ``jobs.submit`` (one
   transaction, in this process), without and with the fence, where the RPC's other costs do
   not hide it.

Run from the repository root with a Docker engine up:  python bench/takeover.py [N]
It starts its own PostgreSQL (tests/postgres.py), schedulers and one agent on 127.0.0.1.
"""

from __future__ import annotations

import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rota.jobspec import JobSpec
from rota.scheduler.cluster.model import JobRecord
from rota.scheduler.core.users import UsersService
from rota.scheduler.store.lease import Lease
from rota.scheduler.store.store import Store, open_engine
from rota.states import JobState
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster, free_port, wait_for
from tests.postgres import running_postgres
from tests.support.tokens import channel as token_channel

SUBMISSIONS = 300
WARM_UP = 20


def new_database(server: str) -> str:
    name = f"bench_{uuid.uuid4().hex[:8]}"
    admin = open_engine(server)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return server.rsplit("/", 1)[0] + f"/{name}"


def serving(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=0.5
            )
        except grpc.RpcError:
            return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def start(cluster: Cluster, key: str, db: str, port: int, *extra: str) -> None:
    args = ["scheduler", "--db", db, "--listen", f"127.0.0.1:{port}", "--http-listen", ""]
    cluster.spawn(key, [*args, "--open-registration", *extra])


def takeover(cluster: Cluster, db: str, rounds: int, stop_signal: int) -> list[float]:
    """Seconds from the leader's ``stop_signal`` to the standby serving, per round."""
    ports = {"a": free_port(), "b": free_port()}
    start(cluster, "a", db, ports["a"], "--ha")
    wait_for(lambda: serving(f"127.0.0.1:{ports['a']}"), 30, what="a leads")
    start(cluster, "b", db, ports["b"], "--ha")
    wait_for(lambda: "standing by" in cluster.log("b"), 30, what="b stands by")
    leader, standby, times = "a", "b", []
    for _ in range(rounds):
        stood_by = cluster.log(leader).count("standing by")
        address = f"127.0.0.1:{ports[standby]}"
        cluster.procs[leader].send_signal(stop_signal)
        began = time.perf_counter()
        wait_for(lambda a=address: serving(a), 60, interval=0.01, what=f"{standby} leads")
        times.append(time.perf_counter() - began)
        if stop_signal == signal.SIGSTOP:
            cluster.procs[leader].send_signal(signal.SIGCONT)
            assert cluster.procs[leader].wait(timeout=30) == 75  # deposed: it exits
        else:
            cluster.procs[leader].wait(timeout=30)
        start(cluster, leader, db, ports[leader], "--ha")
        wait_for(
            lambda k=leader, n=stood_by: cluster.log(k).count("standing by") > n,
            30,
            what=f"{leader} stands by again",
        )
        leader, standby = standby, leader
    for key in ("a", "b"):
        cluster.kill(key)
    return times


def submissions(cluster: Cluster, plain_db: str, ha_db: str) -> dict[str, list[float]]:
    """Seconds per SubmitJobs call (one held job) to a scheduler on ``plain_db`` without HA and
    one on ``ha_db`` with it, calls alternating between the two (both see the same load)."""
    stubs, times = {}, {}
    for key, db, extra in (("plain", plain_db, []), ("ha", ha_db, ["--ha"])):
        cluster.port = free_port()
        start(cluster, key, db, cluster.port, *extra)
        wait_for(lambda: serving(cluster.address), 30, what=f"the {key} scheduler serves")
        store = Store(db)
        cluster.token = UsersService(store.users, time.time).add("bench", True)[1]
        store.close()
        cluster.start_agent(f"n-{key}", 1)
        stubs[key] = pb_grpc.JobServiceStub(token_channel(cluster.address, cluster.token))
        times[key] = []
    spec = pb.JobSpec(image="busybox", command=["true"], resources=pb.Resources(gpus=1), hold=True)
    for n in range(WARM_UP + SUBMISSIONS):
        for key, stub in stubs.items():
            item = pb.SubmitItem(client_request_id=uuid.uuid4().hex, spec=spec)
            began = time.perf_counter()
            stub.SubmitJobs(pb.SubmitJobsRequest(user="bench", items=[item]), timeout=30)
            if n >= WARM_UP:
                times[key].append(time.perf_counter() - began)
    return times


def store_submissions(plain_db: str, ha_db: str) -> dict[str, list[float]]:
    """Seconds per ``store.jobs.submit`` of one job, without and with the fence, alternating."""
    Store(ha_db).close()
    lease = Lease(ha_db, "bench:9717", 60)
    assert lease.take()
    stores = {"plain": Store(plain_db), "ha": Store(ha_db, lease.fence(print))}
    times: dict[str, list[float]] = {key: [] for key in stores}
    job = JobRecord(
        id=0,
        name="bench",
        user="bench",
        account="bench",
        spec=JobSpec(image="busybox", command=("true",), gpus=1),
        state=JobState.PENDING,
        submit_time=time.time(),
        time_limit=60.0,
    )
    for n in range(WARM_UP + 5 * SUBMISSIONS):
        for key, store in stores.items():
            began = time.perf_counter()
            store.jobs.submit([[job]], [uuid.uuid4().hex], "bench")
            if n >= WARM_UP:
                times[key].append(time.perf_counter() - began)
    for store in stores.values():
        store.close()
    lease.close()
    return times


def main(rounds: int) -> None:
    with running_postgres() as server, tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(Path(tmp))
        try:
            killed = takeover(cluster, new_database(server), rounds, signal.SIGKILL)
            stopped = takeover(cluster, new_database(server), max(rounds // 2, 1), signal.SIGSTOP)
            submitted = submissions(cluster, new_database(server), new_database(server))
            stored = store_submissions(new_database(server), new_database(server))
        finally:
            cluster.stop()

    def seconds(values: list[float]) -> str:
        return (
            f"median {statistics.median(values):.2f} s (min {min(values):.2f}, "
            f"max {max(values):.2f}, n={len(values)})"
        )

    def millis(values: list[float]) -> str:
        p90 = statistics.quantiles(values, n=10)[-1]
        return f"p50 {statistics.median(values) * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms (n={len(values)})"

    print(f"take-over after kill -9 of the leader : {seconds(killed)}")
    print(f"take-over after SIGSTOP of the leader : {seconds(stopped)}")
    print(f"SubmitJobs on PostgreSQL without HA   : {millis(submitted['plain'])}")
    print(f"SubmitJobs on PostgreSQL with HA      : {millis(submitted['ha'])}")
    print(f"store.jobs.submit without the fence   : {millis(stored['plain'])}")
    print(f"store.jobs.submit with the fence      : {millis(stored['ha'])}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
