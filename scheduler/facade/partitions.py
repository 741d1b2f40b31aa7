"""PartitionService: ``gadmin partition add|update|remove|list``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from rota.scheduler.cluster.users import Principal
from rota.scheduler.core import authz
from rota.scheduler.core.partitions import PartitionEntry
from rota.scheduler.core.services import Services
from rota.scheduler.core_thread import Executor
from rota.scheduler.pass_loop import PassLoop

T = TypeVar("T")


class PartitionsFacade:
    """Everyone lists the partitions; admins change those they made (``authz``)."""

    def __init__(self, services: Services, core: Executor, passes: PassLoop) -> None:
        self.services = services
        self.core = core
        self.passes = passes

    async def list_partitions(self) -> list[PartitionEntry]:
        return await self.core.call(self.services.partitions.entries)

    async def add_partition(
        self, name: str, fields: Mapping[str, Any], who: Principal
    ) -> PartitionEntry:
        authz.require("partitions.manage", who)
        return await self._change(self.services.partitions.add, name, fields, who.user)

    async def update_partition(
        self, name: str, fields: Mapping[str, Any], who: Principal
    ) -> PartitionEntry:
        authz.require("partitions.manage", who)
        return await self._change(self.services.partitions.update, name, fields, who.user)

    async def remove_partition(self, name: str, who: Principal) -> str:
        authz.require("partitions.manage", who)
        return await self._change(self.services.partitions.remove, name, who.user)

    async def _change(self, step: Callable[..., T], *args: Any) -> T:
        """Run ``step`` on the core thread, then let the next pass see the partitions anew."""

        def change() -> T:
            result = step(*args)
            self.services.snapshots.forget()  # node views carry their partitions
            return result

        result = await self.core.call(change)
        self.passes.want()
        return result
