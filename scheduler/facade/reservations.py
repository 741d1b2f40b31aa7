"""ReservationService: book, change, import, delete and list reservations."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rota.scheduler.cluster.reservation import Reservation
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core.reservation_usage import Usage
from rota.scheduler.core.reservations import ReservationRequest
from rota.scheduler.core.services import Services
from rota.scheduler.core.steps import CoreSteps
from rota.scheduler.core_thread import Executor
from rota.scheduler.pass_loop import PassLoop


class ReservationsFacade:
    """Reservations (who may book or change which: ``authz``, asked by the service).
    ``on_reservations`` is told after a reservation changed (the reservation clock)."""

    def __init__(
        self,
        services: Services,
        core: Executor,
        steps: CoreSteps,
        passes: PassLoop,
        on_reservations: Callable[[], None] | None,
    ) -> None:
        self.services = services
        self.core = core
        self.steps = steps
        self.passes = passes
        self.on_reservations = on_reservations

    async def create_reservation(
        self, request: ReservationRequest, principal: Principal
    ) -> Reservation:
        r = await self.core.call(self.services.reservations.create, request, principal)
        self._reservations_changed()
        return r

    async def list_reservations(self) -> list[tuple[Reservation, list[str]]]:
        return await self.core.call(self.steps.reservations)

    async def get_reservation(self, name: str) -> tuple[Reservation, list[str]]:
        return await self.core.call(self.steps.reservation, name)

    async def update_reservation(
        self, name: str, request: ReservationRequest, given: Sequence[str], principal: Principal
    ) -> Reservation:
        service = self.services.reservations
        r = await self.core.call(service.update, name, request, tuple(given), principal)
        self._reservations_changed()
        return r

    async def import_reservations(
        self, rows: list[ReservationRequest], principal: Principal, dry_run: bool, skip_bad: bool
    ) -> tuple[list[str | None], bool]:
        service = self.services.reservations
        errors, created = await self.core.call(
            service.import_many, rows, principal, dry_run, skip_bad
        )
        if created:
            self._reservations_changed()
        return errors, created

    async def delete_reservation(self, name: str, principal: Principal) -> Reservation:
        """Delete a reservation without running jobs; its pending jobs then wait with
        ``ReservationDeleted``."""
        r = await self.core.call(self.services.reservations.delete, name, principal)
        self._reservations_changed()
        return r

    async def reservation_usage(self, name: str) -> Usage:
        return await self.core.call(self.services.reservations.usage, name)

    async def reservation_edges(self) -> list[float]:
        """A pass at a window's start or end (it sees the calendar at that instant; the tick
        writes); returns the future starts and ends for the clock."""
        edges = await self.core.call(self.services.reservations.edges)
        self.passes.want()
        return edges

    def _reservations_changed(self) -> None:
        self.passes.want()
        if self.on_reservations is not None:
            self.on_reservations()
