"""The scheduler answers the standard gRPC health checking and reflection clients."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc
from tests.cluster import Cluster

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[Cluster]:
    """A scheduler alone (no agents, no Docker needed)."""
    cluster = Cluster(tmp_path)
    cluster.start_scheduler()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_health_is_serving_once_ready_and_not_serving_on_shutdown(scheduler: Cluster) -> None:
    channel = grpc.insecure_channel(scheduler.address)  # no user token: health needs none
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "rota.v1.JobService", "rota.v1.AgentService"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        assert reply.status == SERVING, service
    with pytest.raises(grpc.RpcError) as denied:
        pb_grpc.JobServiceStub(channel).ListJobs(pb.ListJobsRequest(), timeout=10)
    assert denied.value.code() is grpc.StatusCode.UNAUTHENTICATED, "rota's own RPCs do"
    with pytest.raises(grpc.RpcError) as info:
        health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
    assert info.value.code() is grpc.StatusCode.NOT_FOUND

    watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=30)
    assert next(watch).status == SERVING
    scheduler.procs["scheduler"].send_signal(signal.SIGTERM)
    assert next(watch).status == NOT_SERVING  # before the server goes away
    assert scheduler.procs["scheduler"].wait(timeout=30) == 0
    channel.close()


def test_reflection_lists_and_describes_the_services(scheduler: Cluster) -> None:
    with grpc.insecure_channel(scheduler.address) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = set(database.get_services())
        assert {
            "rota.v1.JobService",
            "rota.v1.NodeService",
            "rota.v1.AdminService",
            "rota.v1.AgentService",
            "grpc.health.v1.Health",
            "grpc.reflection.v1alpha.ServerReflection",
        } <= services
        pool = DescriptorPool(database)
        jobs = pool.FindServiceByName("rota.v1.JobService")
        assert {"SubmitJobs", "ListJobs", "CancelJobs"} <= {m.name for m in jobs.methods}
        spec = pool.FindMessageTypeByName("rota.v1.JobSpec")
        assert "image" in spec.fields_by_name
