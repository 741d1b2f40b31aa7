"""Nodes: register (join tokens), drain, resume and remove; what ``ginfo`` shows of each.

Until users and tokens exist, ``user`` is the OS user who ran ``gadmin``: it is recorded as who
made the change (shown by ``ginfo``), not checked.
"""

from __future__ import annotations

import bisect
import logging
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from rota.inputs import SpecError, check_labels, check_node_name, normal_name
from rota.scheduler.cluster.model import AdminState, JobEvent, JobRecord, NodeState
from rota.scheduler.cluster.status import FREE_STATES, NODE_STATES, NodeStatus, node_status
from rota.scheduler.config import SchedulerConfig
from rota.scheduler.core.errors import AlreadyExists, Conflict, NotFound, UserError
from rota.scheduler.core.gpus import GpuHealth
from rota.scheduler.core.lifecycle import Lifecycle, Orders
from rota.scheduler.core.liveness import telemetry_period
from rota.scheduler.core.model import ClusterModel
from rota.scheduler.core.tokens import hash_token, new_token
from rota.scheduler.policy.partitions import PartitionTable
from rota.scheduler.store.protocols import NodeRepository
from rota.states import ACTIVE_STATES, JobState

log = logging.getLogger("rota.scheduler")
DEFAULT_NODE_PAGE = 500  # nodes per ListNodes page when none is asked for
MAX_NODE_PAGE = 1000  # ~2.6 KiB per 8-GPU node: a page stays well under gRPC's 4 MiB
_NO_HOLDERS: Collection[int] = ()


@dataclass(frozen=True, slots=True)
class NodeSummary:
    """Counts over every node: nodes per displayed state, GPUs in all, free, unhealthy."""

    nodes: int = 0
    states: dict[str, int] = field(default_factory=dict)
    gpus_total: int = 0
    gpus_free: int = 0
    gpus_unhealthy: int = 0


@dataclass(frozen=True, slots=True)
class NodePage:
    """One page of nodes in name order (copies with their status), the token of the next
    page ("" on the last) and the summary when asked for."""

    nodes: list[tuple[NodeState, NodeStatus]]
    next_page_token: str
    summary: NodeSummary | None
    partitions: PartitionTable = field(default_factory=PartitionTable)  # the lab's partitions


@dataclass(frozen=True, slots=True)
class RemoveResult:
    """What ``remove --force`` did to the jobs that were on the node."""

    requeued: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


class NodeService:
    """What administrators do to nodes, and how nodes are shown. Each change commits before
    it returns: new records are written, then swapped into the model; a failed write raises
    and changes nothing in memory."""

    def __init__(
        self,
        model: ClusterModel,
        store: NodeRepository,
        lifecycle: Lifecycle,
        gpus: GpuHealth,
        config: SchedulerConfig,
        clock: Callable[[], float],
        partitions: PartitionTable | None = None,
    ) -> None:
        self.model = model
        self.store = store
        self.lifecycle = lifecycle
        self.gpus = gpus
        self.config = config
        self.clock = clock
        self.partitions = partitions or PartitionTable()

    def add(self, name: str, labels: dict[str, str], user: str, rotate_token: bool = False) -> str:
        """Register ``name`` (or give it a new token) and return the join token."""
        name = normal_name(name)
        try:
            check_node_name("name", name)
            check_labels("labels", labels)
        except SpecError as exc:
            raise UserError(str(exc)) from None
        node = self.model.nodes.get(name)
        if node is not None and not rotate_token:
            raise AlreadyExists(
                f"node {name!r} is already registered; `gadmin node add {name} --rotate-token` "
                "issues a new token"
            )
        node = NodeState(name=name, down_since=self.clock()) if node is None else replace(node)
        token = new_token()
        node.token_hash = hash_token(token)
        if labels:
            node.labels = {**node.labels, **labels}
        self.store.save(node)
        self.model.nodes[name] = node
        self.model.bump()
        log.info("node %s %s by %s", name, "token rotated" if rotate_token else "added", user)
        return token

    def drain(self, name: str, reason: str, user: str) -> None:
        """Stop placing jobs on ``name``; its running jobs finish (DRAINING, then DRAINED)."""
        if not reason.strip():
            raise UserError("reason: a drain needs a reason (--reason TEXT)")
        node = replace(
            self._node(name),
            admin_state=AdminState.DRAIN,
            reason=reason.strip(),
            reason_by=user,
            reason_time=self.clock(),
        )
        self.store.save(node)
        self.model.nodes[name] = node
        self.model.bump()
        log.info("node %s drained by %s: %s", name, user, node.reason)

    def resume(self, name: str, user: str) -> None:
        """Undo a drain: the node takes jobs again."""
        node = self._node(name)
        if node.admin_state is AdminState.NONE:
            raise Conflict(f"node {name!r} is not drained")
        node = replace(node, admin_state=AdminState.NONE, reason="", reason_by="", reason_time=None)
        self.store.save(node)
        self.model.nodes[name] = node
        self.model.bump()
        log.info("node %s resumed by %s", name, user)

    def remove(self, name: str, force: bool, user: str) -> tuple[RemoveResult, Orders]:
        """Forget ``name``; its agent is refused from then on.

        Refused while jobs run on it, unless ``force``: then each job's attempt ends NODE_FAIL
        (requeued when the job allows it) and the agent is told to stop the containers. The
        jobs are committed, then the node deleted; each is swapped in (or out) of the model
        only once written.
        """
        self._node(name)
        jobs = [
            replace(j)
            for j in self.model.jobs.values()
            if j.state in ACTIVE_STATES and name in j.node_names
        ]
        if jobs and not force:
            ids = ", ".join(j.display_id for j in jobs)
            raise Conflict(
                f"node {name!r} runs job(s) {ids}; drain it and wait, or use --force "
                "(requeues the jobs that allow it, ends the others NODE_FAIL)"
            )
        life = self.lifecycle
        orders: Orders = []
        events: list[JobEvent] = []
        requeued: list[str] = []
        failed: list[str] = []
        why = f"node {name} removed by {user}"
        for job in jobs:
            orders.extend(life.kill_orders(job, why))
            events.extend(life.attempt_ended(job, JobState.NODE_FAIL, why, orders))
            (requeued if job.state is JobState.PENDING else failed).append(job.display_id)
        self.model.commit(jobs, events)
        self.store.delete(name)
        del self.model.nodes[name]
        self.model.bump()
        log.info("node %s removed by %s", name, user)
        return RemoveResult(tuple(requeued), tuple(failed)), orders

    def page(
        self,
        page_size: int,
        page_token: str,
        summary: bool,
        summary_only: bool = False,
        states: Collection[str] = (),
        maint: Mapping[str, Collection[int]] | None = None,
    ) -> NodePage:
        """Nodes after ``page_token`` (the last name of the previous page) in name order,
        ``page_size`` of them (0: DEFAULT_NODE_PAGE; at most MAX_NODE_PAGE), only those whose
        state is one of ``states`` when given; with ``summary``, counts over all nodes (GPUs
        of ``maint``, node -> indices under an open MAINT window, not counted free); with
        ``summary_only``, no nodes."""
        size = self.page_size(page_size)
        if not page_token.isprintable():
            raise UserError(f"page_token: {page_token!r} is not a token from a previous page")
        unknown = sorted(set(states) - set(NODE_STATES))
        if unknown:
            named = ", ".join(repr(s[:40]) for s in unknown[:5]) + (", ..." if unknown[5:] else "")
            raise UserError(f"states: {named} unknown; one of {', '.join(NODE_STATES)}")
        by_node = self._active_by_node()
        counted = self._summary(by_node, maint or {}) if summary or summary_only else None
        if summary_only:
            return NodePage([], "", counted, self.partitions.copy())
        names = sorted(self.model.nodes)
        start = bisect.bisect_right(names, page_token) if page_token else 0
        stale_after = self._stale_after()  # once: it counts every node
        shown: list[tuple[NodeState, NodeStatus]] = []
        last = start
        for last in range(start, len(names)):
            if len(shown) == size:
                break
            node = self.model.nodes[names[last]]
            if states and self._state(node, by_node, stale_after) not in states:
                continue
            shown.append(self._shown(node, by_node.get(node.name, ()), stale_after))
        else:
            last = len(names)
        more = last < len(names)
        token = shown[-1][0].name if more and shown else ""
        return NodePage(shown, token, counted, self.partitions.copy())

    @staticmethod
    def page_size(asked: int) -> int:
        """The nodes a page of ``asked`` holds (0: DEFAULT_NODE_PAGE); UserError beyond
        MAX_NODE_PAGE."""
        if not 0 <= asked <= MAX_NODE_PAGE:
            raise UserError(f"page_size: {asked} must be 0 to {MAX_NODE_PAGE} (0: default)")
        return asked or DEFAULT_NODE_PAGE

    def _state(
        self, node: NodeState, by_node: Mapping[str, list[JobRecord]], stale_after: float
    ) -> str:
        return node_status(node, by_node.get(node.name, ()), self.clock(), stale_after).state

    def _active_by_node(self) -> dict[str, list[JobRecord]]:
        by_node: dict[str, list[JobRecord]] = {}
        for job in self.model.jobs.values():
            if job.state.active:
                for name in job.node_names:
                    by_node.setdefault(name, []).append(job)
        return by_node

    def _summary(
        self, by_node: dict[str, list[JobRecord]], maint: Mapping[str, Collection[int]]
    ) -> NodeSummary:
        now = self.clock()
        stale_after = self._stale_after()
        states: Counter[str] = Counter()
        total = free = unhealthy = 0
        counts = self.gpus.counts
        for node in self.model.nodes.values():
            active = by_node.get(node.name)
            if active is None and node.schedulable:  # what ``node_status`` says, sooner
                state, holders = "IDLE", _NO_HOLDERS
            else:
                status = node_status(node, active or (), now, stale_after)
                state, holders = status.state, status.holders
            states[state] += 1
            total += len(node.inventory.gpus)
            closed = maint.get(node.name)
            node_free, node_unhealthy = counts(node, {*holders, *closed} if closed else holders)
            free += node_free if state in FREE_STATES else 0
            unhealthy += node_unhealthy
        return NodeSummary(len(self.model.nodes), dict(states), total, free, unhealthy)

    def show(self, name: str) -> tuple[NodeState, NodeStatus]:
        """A copy of node ``name`` with its displayed status; NotFound when unknown."""
        node = self._node(name)
        active = [j for j in self.model.jobs.values() if j.state.active]
        return self._shown(node, active, self._stale_after())

    def sessions(self) -> dict[str, int]:
        """Node name -> id of the stream the model counts as live (0: none)."""
        return {name: node.session for name, node in self.model.nodes.items()}

    def _shown(
        self, node: NodeState, active: Sequence[JobRecord], stale_after: float
    ) -> tuple[NodeState, NodeStatus]:
        status = node_status(node, active, self.clock(), stale_after)
        return replace(node), replace(status, gpus=self.gpus.display(node, status.holders))

    def _stale_after(self) -> float:
        """Telemetry older than three periods (as now given to agents) is shown stale."""
        connected = sum(1 for n in self.model.nodes.values() if n.connected)
        return 3 * telemetry_period(self.config, connected)

    def _node(self, name: str) -> NodeState:
        node = self.model.nodes.get(name)
        if node is None:
            raise NotFound(f"node {name!r} is not registered")
        return node


def _name(node: NodeState) -> str:
    return node.name
