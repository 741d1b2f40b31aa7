"""ReservationService servicer (grpc.aio): create, list, show and delete reservations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rota.scheduler.api.auth import caller
from rota.scheduler.api.errors import unary
from rota.scheduler.cluster.reservation import LEND, Reservation
from rota.scheduler.core.errors import UserError
from rota.scheduler.core.node_bookings import NodeBookings
from rota.scheduler.core.reservations import ReservationRequest
from rota.scheduler.engine import Engine
from rota.v1 import rota_pb2 as pb
from rota.v1 import rota_pb2_grpc as pb_grpc


class ReservationServicer(pb_grpc.ReservationServiceServicer):
    """Bookings of GPUs, made as the caller (the token's user); who may book for whom:
    ``core.authz.may_book``, caps: ``core.booking``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @unary
    async def CreateReservation(
        self, request: pb.CreateReservationRequest, context: Any
    ) -> pb.Reservation:
        r = await self.engine.reservations.create_reservation(request_from_pb(request), caller())
        return reservation_to_pb(r, ())

    @unary
    async def ListReservations(
        self, request: pb.ListReservationsRequest, context: Any
    ) -> pb.ListReservationsResponse:
        found = await self.engine.reservations.list_reservations()
        return pb.ListReservationsResponse(
            reservations=[reservation_to_pb(r, jobs) for r, jobs in found]
        )

    @unary
    async def GetReservation(
        self, request: pb.GetReservationRequest, context: Any
    ) -> pb.Reservation:
        msg = reservation_to_pb(*await self.engine.reservations.get_reservation(request.name))
        usage = await self.engine.reservations.reservation_usage(request.name)
        msg.booked_gpu_seconds = usage.booked
        msg.owner_gpu_seconds = usage.owners
        msg.lent_gpu_seconds = usage.lent
        msg.released_gpu_seconds = usage.released
        return msg

    @unary
    async def ImportReservations(
        self, request: pb.ImportReservationsRequest, context: Any
    ) -> pb.ImportReservationsResponse:
        rows = [request_from_pb(row) for row in request.rows]
        errors, created = await self.engine.reservations.import_reservations(
            rows, caller(), request.dry_run, request.skip_bad
        )
        return pb.ImportReservationsResponse(errors=[e or "" for e in errors], created=created)

    @unary
    async def UpdateReservation(
        self, request: pb.UpdateReservationRequest, context: Any
    ) -> pb.Reservation:
        changes = request_from_pb(request.changes)
        fields = [f.strip() for f in request.fields if f.strip()]
        r = await self.engine.reservations.update_reservation(
            request.name.strip(), changes, fields, caller()
        )
        return reservation_to_pb(r, ())

    @unary
    async def DeleteReservation(
        self, request: pb.DeleteReservationRequest, context: Any
    ) -> pb.DeleteReservationResponse:
        r = await self.engine.reservations.delete_reservation(request.name, caller())
        return pb.DeleteReservationResponse(name=r.name)


def request_from_pb(msg: pb.CreateReservationRequest) -> ReservationRequest:
    """The request of ``msg``; ``gpu_indices`` books exactly those GPUs of its one node."""
    nodes = tuple(n.strip() for n in msg.nodes if n.strip())
    indices = tuple(sorted(set(msg.gpu_indices)))
    if indices and len(nodes) != 1:
        raise UserError("gpu_indices: name exactly one node in nodes to take the GPUs from")
    if indices and msg.gpus not in (0, len(indices)):
        raise UserError(f"gpus: {msg.gpus}, but gpu_indices names {len(indices)} GPU(s)")
    return ReservationRequest(
        name=msg.name.strip(),
        start=msg.start,
        end=msg.end,
        nodes=() if indices else nodes,
        gpus=msg.gpus,
        gpu_type=msg.gpu_type.strip(),
        gpus_per_node=msg.gpus_per_node,
        users=tuple(u.strip() for u in msg.users if u.strip()),
        accounts=tuple(a.strip() for a in msg.accounts if a.strip()),
        flags=tuple(msg.flags),
        lend=not msg.no_lend,
        unused=msg.unused.strip() or LEND,
        gpu_ids={nodes[0]: indices} if indices else {},
    )


def reservation_to_pb(r: Reservation, running: Sequence[str]) -> pb.Reservation:
    return pb.Reservation(
        name=r.name,
        start=r.start,
        end=r.end,
        gpus=[pb.ReservedGpus(node=n, indices=list(idx)) for n, idx in sorted(r.gpus.items())],
        users=list(r.users),
        accounts=list(r.accounts),
        flags=list(r.flags),
        lend=r.lend,
        created_by=r.created_by,
        created_at=r.created_at,
        running_jobs=list(running),
        unused=r.unused,
        given_back=r.given_back,
    )


def add_bookings(msg: pb.Node, booked: NodeBookings | None) -> None:
    """Fill a node's reservation fields (none when ``booked`` is None)."""
    if booked is None:
        return
    msg.gpus_reserved = booked.gpus_now
    msg.reserved_by.extend(booked.names_now)
    msg.maintenance = booked.maintenance
    if msg.gpus_free:  # GPUs under an open MAINT window are free to no one
        closed = sum(1 for g in msg.gpus if g.info.index in booked.gpus_maint and g.state == "idle")
        msg.gpus_free = max(0, msg.gpus_free - closed)
    msg.gpus_reserved_next = booked.gpus_next
    msg.reserved_next_by.extend(booked.names_next)
    msg.reserved_next_start = booked.next_start
