"""NodeService, AdminService and GpuService: list, register, drain, resume, remove."""

from __future__ import annotations

from dataclasses import replace

from rota.scheduler.agent_hub import AgentHub
from rota.scheduler.cluster.model import NodeState
from rota.scheduler.cluster.status import NodeStatus
from rota.scheduler.cluster.users import Principal
from rota.scheduler.core import authz
from rota.scheduler.core.node_bookings import NodeBookings
from rota.scheduler.core.nodes import NodePage, RemoveResult
from rota.scheduler.core.services import Services
from rota.scheduler.core.steps import CoreSteps
from rota.scheduler.core_thread import Executor
from rota.scheduler.pass_loop import PassLoop

NODES_PER_HOP = 100  # nodes of a ListNodes page built per core-thread hop (~0.1-0.2 ms each)


class NodesFacade:
    """Nodes and GPUs: everyone lists them, admins manage them (``authz``)."""

    def __init__(
        self,
        services: Services,
        core: Executor,
        steps: CoreSteps,
        hub: AgentHub,
        passes: PassLoop,
    ) -> None:
        self.services = services
        self.core = core
        self.steps = steps
        self.hub = hub
        self.passes = passes

    async def list_nodes(
        self,
        page_size: int,
        page_token: str,
        summary: bool,
        summary_only: bool,
        states: tuple[str, ...] = (),
    ) -> NodePage:
        """A page of nodes in name order (only those in ``states`` when given) with
        ``summary`` counts; built ``NODES_PER_HOP`` nodes per hop, each as it was then."""
        nodes = self.services.nodes
        want = nodes.page_size(page_size)
        first = await self.core.call(
            self._first_page, min(want, NODES_PER_HOP), page_token, summary, summary_only, states
        )
        shown, page = list(first.nodes), first
        while page.next_page_token and len(shown) < want:
            hop = min(want - len(shown), NODES_PER_HOP)
            page = await self.core.call(nodes.page, hop, page.next_page_token, False, False, states)
            shown += page.nodes
        return replace(first, nodes=shown, next_page_token=page.next_page_token)

    def _first_page(
        self, size: int, token: str, summary: bool, summary_only: bool, states: tuple[str, ...]
    ) -> NodePage:
        """On the core thread: the first hop, its summary leaving MAINT GPUs out of free."""
        maint = self.services.reservations.maintenance_now() if summary or summary_only else None
        return self.services.nodes.page(size, token, summary, summary_only, states, maint)

    async def node_bookings(self, names: list[str]) -> dict[str, NodeBookings]:
        """Reservations on these nodes now and next (``ginfo``)."""
        return await self.core.call(self.services.reservations.on_nodes, names)

    async def get_node(self, name: str) -> tuple[NodeState, NodeStatus]:
        return await self.core.call(self.services.nodes.show, name)

    async def add_node(
        self, name: str, labels: dict[str, str], rotate_token: bool, who: Principal
    ) -> str:
        """Register a node (or rotate its token: the old token's stream ends now)."""
        authz.require("nodes.manage", who)
        nodes = self.services.nodes
        token = await self.core.call(nodes.add, name, labels, who.user, rotate_token)
        if rotate_token:
            self.hub.disconnect(name.strip())
        self.passes.want()
        return token

    async def drain_node(
        self, name: str, reason: str, who: Principal
    ) -> tuple[NodeState, NodeStatus]:
        authz.require("nodes.manage", who)
        shown = await self.core.call(self.steps.drain_node, name, reason, who.user)
        self.passes.want()
        return shown

    async def resume_node(self, name: str, who: Principal) -> tuple[NodeState, NodeStatus]:
        authz.require("nodes.manage", who)
        shown = await self.core.call(self.steps.resume_node, name, who.user)
        self.passes.want()
        return shown

    async def remove_node(self, name: str, force: bool, who: Principal) -> RemoveResult:
        """Forget a node: stop its containers, then end its stream."""
        authz.require("nodes.manage", who)
        result, orders = await self.core.call(self.services.nodes.remove, name, force, who.user)
        self.hub.dispatch(orders)
        self.hub.disconnect(name)
        self.passes.want()
        return result

    async def resume_gpu(self, node: str, index: int, who: Principal) -> str:
        authz.require("gpus.manage", who)
        message = await self.core.call(self.services.gpus.resume, node, index, who.user)
        self.passes.want()  # a resumed GPU can take pending jobs at once
        return message

    async def drain_gpu(self, node: str, index: int, reason: str, who: Principal) -> str:
        authz.require("gpus.manage", who)
        message = await self.core.call(self.services.gpus.drain, node, index, who.user, reason)
        self.passes.want()
        return message
