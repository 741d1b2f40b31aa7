"""A user's dependencies cannot stall the scheduler (fifth attack): bob names his own array of
5,000 tasks a hundred times in the dependency of a hundred jobs, and gives hundreds of jobs of
different names ``singleton``. Before, each pass looked at every task of the array once per
name and job (about 10 s a pass), and each ``singleton`` job read every job in memory; the
submission itself read the array's 5,000 rows once per name. Every call that needs the core
(``ListNodes`` here, and every other user's) waited for it."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster, free_port, fresh_passes, scheduler_passes
from tests.support.fake_agent import FakeAgent
from tests.support.tokens import channel as token_channel


def test_dependencies_naming_a_large_array_many_times_do_not_stall_passes(
    tmp_path: Path,
) -> None:
    cluster = Cluster(tmp_path)
    http = free_port()
    cluster.start_scheduler("--open-registration", "--http-listen", f"127.0.0.1:{http}")
    bob = cluster.add_user("bob")
    agent = FakeAgent(cluster.address, "n1", interval=0.2)
    channel = token_channel(cluster.address, bob)
    try:
        agent.start()
        nodes = pb_grpc.NodeServiceStub(channel)
        jobs = pb_grpc.JobServiceStub(channel)
        nodes.ListNodes(pb.ListNodesRequest(), timeout=10)

        def submit(*specs: pb.JobSpec) -> list[str]:
            items = [pb.SubmitItem(spec=s) for s in specs]
            answer = jobs.SubmitJobs(pb.SubmitJobsRequest(items=items), timeout=120)
            return [i for j in answer.jobs for i in j.job_ids]

        gpu = pb.Resources(gpus=1)
        (array,) = {
            i.split("_")[0]
            for i in submit(pb.JobSpec(image="img", command=["true"], hold=True, array="0-4999"))
        }
        named = "afterok" + f":{array}" * 100
        waiting = submit(
            pb.JobSpec(image="img", command=["true"], resources=gpu, array="0-99", dependency=named)
        )
        singles = submit(
            *(
                pb.JobSpec(
                    image="img",
                    command=["true"],
                    name=f"s{i}",
                    resources=gpu,
                    dependency=f"singleton,afterok:{array}",
                )
                for i in range(800)
            )
        )
        seen = scheduler_passes(http)
        samples = []  # ListNodes while the passes over bob's jobs run
        deadline = time.monotonic() + 120
        while scheduler_passes(http) < seen + 2 and time.monotonic() < deadline:
            sent = time.monotonic()
            nodes.ListNodes(pb.ListNodesRequest(), timeout=60)
            samples.append(time.monotonic() - sent)
            time.sleep(0.02)
        # before: each pass held the core for about 10 s, and ListNodes waited for it
        assert statistics.median(samples) <= 0.1, f"median ListNodes {statistics.median(samples)}"
        assert max(samples) <= 1.0, f"slowest ListNodes {max(samples):.1f} s"

        shown = jobs.ListJobs(pb.ListJobsRequest(ids=[waiting[0], singles[0]]), timeout=30)
        assert {j.reason for j in shown.jobs} == {"Dependency"}
        jobs.CancelJobs(pb.CancelJobsRequest(ids=[array]), timeout=60)
        fresh_passes(http, 1, timeout=120)
        shown = jobs.ListJobs(pb.ListJobsRequest(ids=[waiting[-1], singles[-1]]), timeout=30)
        assert {j.reason for j in shown.jobs} == {"DependencyNeverSatisfied"}
    finally:
        channel.close()
        agent.stop()
        cluster.stop()
