"""The standard gRPC services beside rota's own: health checking and server reflection.

Health answers NOT_SERVING for the server ("") and every rota service until ``set_serving``;
the daemon calls ``enter_graceful_shutdown`` on the servicer when it stops.
"""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from grpc_reflection.v1alpha import reflection

from rota.v1 import rota_pb2

# The health status of "" (the whole server) and of every rota service.
HEALTH_SERVICES = ("", *(s.full_name for s in rota_pb2.DESCRIPTOR.services_by_name.values()))


async def add_standard_services(server: grpc.aio.Server) -> health_aio.HealthServicer:
    """Health checking (every service NOT_SERVING until ``set_serving``) and reflection."""
    health = health_aio.HealthServicer()
    for name in HEALTH_SERVICES:
        await health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    health_name = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
    reflection.enable_server_reflection(
        [*HEALTH_SERVICES[1:], health_name, reflection.SERVICE_NAME], server
    )
    return health


async def set_serving(health: health_aio.HealthServicer) -> None:
    for name in HEALTH_SERVICES:
        await health.set(name, health_pb2.HealthCheckResponse.SERVING)
