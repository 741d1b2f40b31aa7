"""The gRPC contract as a client sees it: status codes for bad requests, paging, watching."""

from __future__ import annotations

import grpc
import pytest

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import TEST_IMAGE, Cluster
from tests.support.tokens import channel


@pytest.fixture
def api(cluster: Cluster) -> pb_grpc.JobServiceStub:
    cluster.start_scheduler()
    cluster.start_agent("n1", gpus=1)
    return pb_grpc.JobServiceStub(channel(cluster.address, cluster.token))


def _spec(**kw: object) -> pb.JobSpec:
    return pb.JobSpec(image=TEST_IMAGE, command=["true"], **kw)  # type: ignore[arg-type]


def _code(call) -> grpc.StatusCode:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()


def test_malformed_submissions_are_invalid_argument_and_store_nothing(
    api: pb_grpc.JobServiceStub,
) -> None:
    cases = [
        pb.SubmitItem(spec=pb.JobSpec(command=["true"])),  # no image
        pb.SubmitItem(spec=pb.JobSpec(image=TEST_IMAGE)),  # no command
        pb.SubmitItem(spec=_spec(resources=pb.Resources(gpus=64))),
        pb.SubmitItem(spec=_spec(dependency="afterok:nope")),
        pb.SubmitItem(spec=_spec(array="9-1")),
    ]
    for item in cases:
        request = pb.SubmitJobsRequest(items=[pb.SubmitItem(spec=_spec()), item], user="ann")
        with pytest.raises(grpc.RpcError) as info:
            api.SubmitJobs(request, timeout=10)
        assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT, item
        assert info.value.details()
    listed = api.ListJobs(pb.ListJobsRequest(all_states=True), timeout=10)
    assert list(listed.jobs) == []


def test_unknown_ids_are_not_found_or_invalid(api: pb_grpc.JobServiceStub) -> None:
    assert (
        _code(lambda: api.GetJob(pb.GetJobRequest(id="424242"), timeout=10))
        is grpc.StatusCode.NOT_FOUND
    )
    assert (
        _code(lambda: api.GetJob(pb.GetJobRequest(id="x1"), timeout=10))
        is grpc.StatusCode.INVALID_ARGUMENT
    )


def test_paging(api: pb_grpc.JobServiceStub) -> None:
    items = [pb.SubmitItem(spec=_spec(hold=True), client_request_id=f"r{i}") for i in range(5)]
    ids = [j.job_ids[0] for j in api.SubmitJobs(pb.SubmitJobsRequest(items=items, user="ann")).jobs]
    seen: list[str] = []
    token = ""
    while True:
        page = api.ListJobs(pb.ListJobsRequest(all_states=True, page_size=2, page_token=token))
        seen += [j.id for j in page.jobs]
        token = page.next_page_token
        if not token:
            break
    assert seen == ids


def test_agent_stream_must_start_with_hello(cluster: Cluster) -> None:
    cluster.start_scheduler()
    agents = pb_grpc.AgentServiceStub(grpc.insecure_channel(cluster.address))
    beat = pb.AgentMessage(heartbeat=pb.Heartbeat())
    with pytest.raises(grpc.RpcError) as info:
        list(agents.Connect(iter([beat]), timeout=10))
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "hello" in info.value.details()
