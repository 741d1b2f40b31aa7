"""Hostile requests against a real scheduler process: hypothesis sends random and malformed
values to every job RPC; the server stays up, answers INVALID_ARGUMENT (or NOT_FOUND for a
well-formed id that does not exist), and the database does not change."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import TEST_IMAGE, Cluster
from tests.support.tokens import channel

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
_text = st.text(max_size=60) | st.sampled_from(["x" * 200_000, "a\x00b", "\x1b[2J", "../..", ""])
_floats = st.floats(allow_nan=True, allow_infinity=True)
_ids = st.lists(st.text(max_size=12) | st.sampled_from(["1", "1_2", "99999999999999999999"]))


def _db_rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return [
            row
            for table in ("jobs", "job_events", "submit_requests")
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1")
        ]


def _code(call: Callable[[], Any]) -> grpc.StatusCode:
    try:
        result = call()
        if hasattr(result, "__iter__") and not hasattr(result, "ListFields"):
            for _ in result:  # a stream: read it to its end or error
                pass
    except grpc.RpcError as exc:
        assert exc.details(), exc.code()
        return exc.code()
    return grpc.StatusCode.OK


def _valid() -> pb.JobSpec:
    return pb.JobSpec(image=TEST_IMAGE, command=["true"], resources=pb.Resources(gpus=1))


_hostile: list[Callable[[pb.JobSpec], Any]] = [
    lambda s: setattr(s, "name", "n" * 150_000),
    lambda s: setattr(s, "name", "bad\x07name"),
    lambda s: setattr(s.resources, "cpus", math.nan),
    lambda s: setattr(s.resources, "cpus", math.inf),
    lambda s: setattr(s.resources, "cpus", -4.0),
    lambda s: setattr(s, "time_limit", -60.0),
    lambda s: setattr(s, "begin_time", math.nan),
    lambda s: setattr(s, "array", "0-99999999"),
    lambda s: s.env.update({f"K{i}": "v" for i in range(50_000)}),
    lambda s: s.env.update({"CUDA_VISIBLE_DEVICES": "0,1,2,3"}),
    lambda s: s.mounts.append(pb.Mount(source="/", target="/host")),
    lambda s: s.mounts.append(pb.Mount(source="/var/run/docker.sock", target="/s")),
    lambda s: s.mounts.append(pb.Mount(source="/data/../etc", target="/e")),
    lambda s: setattr(s, "image", ""),
    lambda s: s.ClearField("command"),
    lambda s: setattr(s, "pull", "sometimes"),
    lambda s: setattr(s, "dependency", "afterok:abc"),
]


@pytest.fixture
def target(cluster: Cluster) -> tuple[pb_grpc.JobServiceStub, Cluster]:
    cluster.start_scheduler("--open-registration")
    cluster.start_agent("n1", 2)
    return pb_grpc.JobServiceStub(channel(cluster.address, cluster.token)), cluster


def test_hostile_submissions_are_invalid_and_store_nothing(
    target: tuple[pb_grpc.JobServiceStub, Cluster],
) -> None:
    api, cluster = target
    db = cluster.root / "sched.db"
    before = _db_rows(db)

    @FUZZ
    @given(st.lists(st.sampled_from(range(len(_hostile))), min_size=1, max_size=3), st.booleans())
    def hostile(mutations: list[int], many: bool) -> None:
        spec = _valid()
        for index in mutations:
            _hostile[index](spec)
        items = [pb.SubmitItem(spec=_valid())] * (3 if many else 0) + [pb.SubmitItem(spec=spec)]
        request = pb.SubmitJobsRequest(items=items, user="mallory")
        assert _code(lambda: api.SubmitJobs(request, timeout=30)) in (
            grpc.StatusCode.INVALID_ARGUMENT,
            grpc.StatusCode.RESOURCE_EXHAUSTED,  # larger than gRPC's 4 MiB receive limit
        )

    hostile()
    too_many = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=_valid())] * 1001, user="mallory")
    with pytest.raises(grpc.RpcError) as info:
        api.SubmitJobs(too_many, timeout=30)
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "max_jobs_per_submit" in (info.value.details() or "")
    assert _db_rows(db) == before


def test_random_requests_never_break_the_server_or_change_the_database(
    target: tuple[pb_grpc.JobServiceStub, Cluster],
) -> None:
    api, cluster = target
    db = cluster.root / "sched.db"
    before = _db_rows(db)
    allowed = {
        grpc.StatusCode.OK,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
    specs = st.builds(
        pb.JobSpec,
        name=_text,
        image=_text,
        command=st.lists(_text, max_size=3),
        resources=st.builds(
            pb.Resources,
            gpus=st.integers(0, 2**32 - 1),
            cpus=_floats,
            memory=st.integers(0, 2**64 - 1),
        ),
        nodes=st.integers(0, 2**32 - 1),
        time_limit=_floats,
        priority=st.integers(-(2**31), 2**31 - 1),
        begin_time=_floats,
        array=_text,
        env=st.dictionaries(_text, _text, max_size=3),
        workdir=_text,
        pull=_text,
    )

    @FUZZ
    @given(specs)
    def submit(spec: pb.JobSpec) -> None:
        request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=spec)], test_only=True)
        assert _code(lambda: api.SubmitJobs(request, timeout=30)) in allowed

    @FUZZ
    @given(_ids, _text, st.integers(0, 2**32 - 1), _text, st.sampled_from([1, 2, 3]))
    def others(ids: list[str], text: str, number: int, token: str, action: int) -> None:
        one = ids[0] if ids else text
        calls = [
            lambda: api.ListJobs(
                pb.ListJobsRequest(ids=ids, users=[text], page_size=number, page_token=token)
            ),
            lambda: api.CancelJobs(pb.CancelJobsRequest(ids=ids, reason=text)),
            lambda: api.ControlJobs(pb.ControlJobsRequest(ids=ids, action=action)),
            lambda: api.GetJob(pb.GetJobRequest(id=one)),
            lambda: api.ExplainJob(pb.ExplainJobRequest(id=one)),
            lambda: api.StreamLogs(pb.StreamLogsRequest(id=one, node=text), timeout=10),
        ]
        for call in calls:
            assert _code(call) in allowed

    submit()
    others()
    assert _db_rows(db) == before
    assert cluster.procs["scheduler"].poll() is None
    assert list(api.ListJobs(pb.ListJobsRequest(all_states=True), timeout=10).jobs) == []
