"""Benchmark: large array submissions, and whether the scheduler keeps answering meanwhile.

Run from the repository root:  python bench/large_arrays.py [RUNS] [BIG]
(defaults 3 and 100000; no Docker needed). Each run starts a real scheduler (SQLite, a
subprocess) on 127.0.0.1 with one simulated 8-GPU node (tests/support/fake_agent.py: hello, a
heartbeat every 0.5 s, orders ignored), then:

1. ``gsub`` of a 10,000-task array (``array: 0-9999``, 1 GPU each), whole process;
2. with those 10,000 jobs queued: ``gqueue -j ARRAY_5`` and ``gqueue --array`` (pending and
   running, one line per task), whole process, 5 times each;

then, on a fresh scheduler (``max_array_size`` raised to BIG), one SubmitJobs RPC of a BIG-task
array while ``ListNodes`` (what ``ginfo`` asks) is sent every 50 ms on an open channel: the
slowest and median answer while the submission is in flight and during the 5 s after it (the
passes that follow), the slowest heartbeat-to-pong round trip of the node, and whether its
stream was dropped.

``python bench/large_arrays.py steps`` instead times each core-thread step of a 10,000-task
array in-process (SQLite, no network) in CPU time of the calling thread, which other load on
the machine does not inflate as it does wall time: the one-step submit, the chunked submit's
steps, a page of ``gqueue``, ``gqueue -j ID_5``'s lookup, a pass's snapshot, and a chunked
cancel's steps.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rota.jobspec import JobSpec
from rota.scheduler.core.jobs import JobListing, SubmitItem
from rota.scheduler.large_requests import ADOPT_CHUNK, CANCEL_CHUNK
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster, wait_for
from tests.support.core import Harness
from tests.support.fake_agent import FakeAgent
from tests.support.tokens import channel as token_channel

T = TypeVar("T")
JOB = "name: arr\nimage: busybox\ncommand: [sleep, '60']\nresources: {{gpus: 1}}\narray: 0-{last}\n"


def _ms(values: list[float]) -> str:
    if not values:
        return "n/a"
    return (
        f"median {statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, "
        f"max {max(values) * 1000:.0f}, n={len(values)})"
    )


def _cpu(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.thread_time()
    out = fn()
    return time.thread_time() - start, out


def steps() -> None:
    """CPU time of each core-thread step for a 10,000-task array (see the module docstring)."""
    spec = JobSpec(image="img", command=("true",), gpus=1, array="0-9999")
    item = [SubmitItem(spec)]
    with tempfile.TemporaryDirectory() as tmp:
        h = Harness(Path(tmp))
        h.connect("n1", gpus=8)
        jobs = h.s.jobs
        took, admission = _cpu(lambda: jobs.admit(item, "ann"))
        print(f"chunked submit: admit (core)                         : {took * 1000:.1f} ms")
        off, stored = _cpu(lambda: h.store.jobs.submit(admission.expand(), [""], "ann"))
        records = stored[0]
        chunks = [
            _cpu(lambda c=c: jobs.adopt(records[c : c + ADOPT_CHUNK], True))[0]
            for c in range(0, len(records), ADOPT_CHUNK)
        ]
        print(
            f"chunked submit: adopt {ADOPT_CHUNK} (core), median / max of {len(chunks)}: "
            f"{statistics.median(chunks) * 1000:.1f} / {max(chunks) * 1000:.1f} ms"
        )
        print(f"chunked submit: expand + bulk insert (own thread)    : {off * 1000:.0f} ms")
        array = records[0].display_id.split("_")[0]
        took, page = _cpu(lambda: jobs.list_page(JobListing()))
        print(
            f"list_page, first of 10,000 live ({len(page.jobs)} jobs)          : "
            f"{took * 1000:.1f} ms"
        )
        took, _ = _cpu(lambda: jobs.list_page(JobListing(ids=(f"{array}_5",))))
        print(f"list_page of ID_5                                    : {took * 1000:.1f} ms")
        took, _ = _cpu(h.s.planner.snapshot)
        print(f"snapshot for a pass, 10,000 pending                  : {took * 1000:.1f} ms")
        took, targets = _cpu(lambda: jobs.cancel_targets([array]))
        print(f"chunked cancel: cancel_targets (core)                : {took * 1000:.1f} ms")
        ids = targets[array]
        chunks = [
            _cpu(lambda c=c: jobs.cancel_live(ids[c : c + CANCEL_CHUNK], "ann"))[0]
            for c in range(0, len(ids), CANCEL_CHUNK)
        ]
        print(
            f"chunked cancel: cancel_live {CANCEL_CHUNK} (core), median / max of {len(chunks)}: "
            f"{statistics.median(chunks) * 1000:.1f} / {max(chunks) * 1000:.1f} ms"
        )
        took, _ = _cpu(lambda: jobs.submit(item, "ann"))
        print(f"JobService.submit, one step (small-submission path) : {took * 1000:.0f} ms")
        h.store.close()


def _start(root: Path, *settings: str) -> tuple[Cluster, FakeAgent]:
    """A scheduler with one fake node; ``settings``: lines of its YAML settings file."""
    cluster = Cluster(root)
    config = root / "scheduler.yaml"
    config.write_text("".join(f"{line}\n" for line in settings))
    cluster.start_scheduler("--open-registration", "--config", str(config))
    agent = FakeAgent(cluster.address, "bench-node").start()
    wait_for(lambda: (n := cluster.node("bench-node")) and n["state"] != "DOWN", 20)
    return cluster, agent


def _timed(cluster: Cluster, *args: str) -> tuple[float, str]:
    start = time.perf_counter()
    out = cluster.cli(*args, check=True).stdout
    return time.perf_counter() - start, out


def small(runs: int) -> None:
    submit, by_id, listing = [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            cluster, agent = _start(Path(tmp))
            try:
                job = cluster.write_job("arr.yaml", JOB.format(last=9999))
                took, out = _timed(cluster, "gsub", "--parsable", str(job))
                submit.append(took)
                array_id = out.strip().split("_")[0]
                time.sleep(2)  # let the pass that follows the submission finish
                for _ in range(5):
                    took, out = _timed(cluster, "gqueue", "-j", f"{array_id}_5")
                    assert f"{array_id}_5" in out, out
                    by_id.append(took)
                for _ in range(5):
                    took, out = _timed(cluster, "gqueue", "--array")  # one line per task
                    assert len(out.splitlines()) >= 10_001, len(out.splitlines())
                    listing.append(took)
            finally:
                agent.stop()
                cluster.stop()
    print(f"gsub of a 10,000-task array, whole process : {_ms(submit)}")
    print(f"gqueue -j ID_5 with 10,000 queued           : {_ms(by_id)}")
    print(f"gqueue with 10,000 pending                  : {_ms(listing)}")


def big(tasks: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # the array-size limit (max_array_size, default 10,000) raised to let it through
        cluster, agent = _start(
            Path(tmp),
            f"max_array_size: {max(tasks, 10_000)}",
            "limits: {max_pending_per_user: null}",
        )
        try:
            channel = token_channel(cluster.address, cluster.token)
            jobs = pb_grpc.JobServiceStub(channel)
            nodes = pb_grpc.NodeServiceStub(channel)
            spec = pb.JobSpec(
                name="big",
                image="busybox",
                command=["sleep", "60"],
                resources=pb.Resources(gpus=1),
                array=f"0-{tasks - 1}",
            )
            request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)], user="bench")
            done: dict[str, float] = {}

            def submit() -> None:
                start = time.perf_counter()
                jobs.SubmitJobs(request, timeout=600)
                done["took"] = time.perf_counter() - start
                done["at"] = time.monotonic()

            during: list[float] = []
            after: list[float] = []
            thread = threading.Thread(target=submit)
            pongs_before = len(agent.pongs)
            thread.start()
            while "at" not in done or time.monotonic() - done["at"] < 5:
                sent = time.monotonic()
                nodes.ListNodes(pb.ListNodesRequest(), timeout=600)
                took = time.monotonic() - sent
                (after if "at" in done and sent > done["at"] else during).append(took)
                time.sleep(0.05)
            thread.join()
            pongs = agent.pongs[pongs_before:]
            print(f"SubmitJobs of a {tasks:,}-task array (RPC)   : {done['took'] * 1000:.0f} ms")
            print(f"ListNodes while it is submitted              : {_ms(during)}")
            print(f"ListNodes during the 5 s after               : {_ms(after)}")
            print(f"heartbeat -> pong meanwhile                  : {_ms(pongs)}")
            print(f"agent stream dropped                         : {agent.dropped or 'no'}")
        finally:
            agent.stop()
            cluster.stop()


if __name__ == "__main__":
    if sys.argv[1:] == ["steps"]:
        steps()
        sys.exit()
    small(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
    big(int(sys.argv[2]) if len(sys.argv) > 2 else 100_000)
