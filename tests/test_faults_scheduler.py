"""Issue 5 end to end: the scheduler is killed with SIGKILL in the middle of a submission burst
and again while the jobs run. Every job a client saw acknowledged exists exactly once, runs
exactly once and completes; clients that saw errors retry with the same request ids and get
no duplicates.

``ROTA_FAULT_BURST_JOBS`` (default 300) sets the number of jobs; the run time is bound by how
fast the one shared Docker engine starts containers (about 5 a second on 2 cores).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import grpc
import pytest

from tests.cluster import TEST_IMAGE, Cluster, wait_for
from tests.faults_support import Api, config_file, restart_scheduler
from tests.support.tokens import channel as token_channel

CLIENTS = 5
BATCH = 4
# Every job is a real container (the engine starts ~6 a second here): 300 keep the test
# within its time limit on a busy CI machine; ROTA_FAULT_BURST_JOBS runs a bigger burst.
TOTAL = int(os.environ.get("ROTA_FAULT_BURST_JOBS", "300"))


@dataclass
class Client:
    """One submitting client: its acknowledged ids by request id, and what it went through."""

    number: int
    acked: dict[str, str] = field(default_factory=dict)
    errors: int = 0
    duplicates: int = 0


def _submit_all(address: str, token: str, client: Client, out_dir: str, deadline: float) -> None:
    from rota.v1 import rota_pb2 as pb
    from rota.v1 import rota_pb2_grpc as pb_grpc

    per_client = TOTAL // CLIENTS
    spec = dict(
        image=TEST_IMAGE,
        command=["sh", "-c", "echo $ROTA_JOB_ID >> /out/runs"],
        resources=pb.Resources(gpus=1),
        mounts=[pb.Mount(source=out_dir, target="/out")],
    )
    with token_channel(address, token) as channel:
        stub = pb_grpc.JobServiceStub(channel)
        for start in range(0, per_client, BATCH):
            ids = [f"c{client.number}-{i}" for i in range(start, min(start + BATCH, per_client))]
            request = pb.SubmitJobsRequest(
                user="burst",
                items=[
                    pb.SubmitItem(client_request_id=r, spec=pb.JobSpec(name=r, **spec)) for r in ids
                ],
            )
            while True:  # retry the very same request (same ids) until it is acknowledged
                assert time.monotonic() < deadline, f"client {client.number} never got through"
                try:
                    reply = stub.SubmitJobs(request, timeout=5)
                except grpc.RpcError as exc:
                    assert exc.code() in (
                        grpc.StatusCode.UNAVAILABLE,
                        grpc.StatusCode.DEADLINE_EXCEEDED,
                        grpc.StatusCode.CANCELLED,
                    ), exc
                    client.errors += 1
                    time.sleep(0.2)
                    continue
                for job in reply.jobs:
                    client.duplicates += job.duplicate
                    (client.acked[job.client_request_id],) = job.job_ids
                break


@pytest.mark.timeout(540)
def test_scheduler_sigkill_during_a_submission_burst_loses_and_duplicates_nothing(
    cluster: Cluster,
) -> None:
    args = ("--config", config_file(cluster, node_timeout=10, node_grace=60), "--open-registration")
    sched = cluster.start_scheduler(*args)
    out = cluster.root / "out"
    out.mkdir()
    out.chmod(0o777)  # jobs run as an unprivileged user
    for short in ("n1", "n2", "n3"):
        cluster.start_agent(short, 4)
    clients = [Client(k) for k in range(CLIENTS)]
    deadline = time.monotonic() + 90
    threads = [
        threading.Thread(
            target=_submit_all, args=(cluster.address, cluster.token, c, str(out), deadline)
        )
        for c in clients
    ]
    for t in threads:
        t.start()
    wait_for(
        lambda: sum(len(c.acked) for c in clients) >= TOTAL * 0.3,
        30,
        0.01,
        what="a third of the burst acknowledged",
    )
    cluster.kill("scheduler", signal.SIGKILL)  # mid-burst
    restart_scheduler(cluster, *args)
    for t in threads:
        t.join(timeout=100)
    assert not any(t.is_alive() for t in threads)
    assert sum(len(c.acked) for c in clients) == TOTAL
    assert sum(c.errors for c in clients) > 0, "the kill happened while clients were submitting"

    api = Api(cluster.address, cluster.token)
    try:
        wait_for(lambda: _count(api, "COMPLETED") >= TOTAL // 3, 120, 0.5, what="a third done")
        cluster.kill("scheduler", signal.SIGKILL)  # while launches and reports are in flight
        restart_scheduler(cluster, *args)
        wait_for(lambda: _count(api, "COMPLETED") == TOTAL, 240, 1.0, what="every job completes")
        jobs = api.jobs()
    finally:
        api.close()
    del sched

    names = Counter(j.name for j in jobs)
    assert len(jobs) == TOTAL and set(names.values()) == {1}, "no job was created twice"
    by_id = {j.id: j for j in jobs}
    for client in clients:
        for request_id, job_id in client.acked.items():
            assert by_id[job_id].name == request_id, "an acknowledged id names its own job"
    assert all(j.attempt == 1 for j in jobs), "no job needed a second attempt"
    runs = Counter((out / "runs").read_text().split())
    assert len(runs) == TOTAL and set(runs.values()) == {1}, "every job ran exactly once"
    print(
        f"burst: {TOTAL} jobs, {sum(c.errors for c in clients)} client errors retried, "
        f"{sum(c.duplicates for c in clients)} duplicate answers"
    )


def _count(api: Api, state: str) -> int:
    wanted = api.pb.JobState.Value(state)
    return sum(1 for j in api.jobs() if j.state == wanted)
