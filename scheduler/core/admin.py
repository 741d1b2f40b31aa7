"""Node administration: register (join tokens), drain, resume and remove nodes.

Until users and tokens exist, ``user`` is the OS user who ran ``gadmin``: it is recorded as who
made the change (shown by ``ginfo``), not checked.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace

from rota.scheduler.cluster.model import JobEvent, NodeState
from rota.scheduler.core.base import NotFound, Orders, UserError, hash_token, log
from rota.scheduler.core.planning import PlanningCore
from rota.states import ACTIVE_STATES, JobState

DRAIN = "DRAIN"


class Conflict(Exception):
    """The request is valid but the cluster's state refuses it (maps to FAILED_PRECONDITION)."""


@dataclass(frozen=True, slots=True)
class RemoveResult:
    """What ``remove_node --force`` did to the jobs that were on the node."""

    requeued: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


def new_token() -> str:
    """A fresh join token (printed once; only its hash is stored)."""
    return secrets.token_urlsafe(32)


class AdminCore(PlanningCore):
    """What administrators do to nodes. Each method commits before it returns."""

    def add_node(
        self, name: str, labels: dict[str, str], user: str, rotate_token: bool = False
    ) -> str:
        """Register ``name`` (or give it a new token) and return the join token."""
        name = name.strip()
        if not name or any(c.isspace() for c in name):
            raise UserError(f"node name {name!r} must be non-empty without spaces")
        node = self.nodes.get(name)
        if node is not None and not rotate_token:
            raise Conflict(
                f"node {name!r} is already registered; `gadmin node add {name} --rotate-token` "
                "issues a new token"
            )
        if node is None:
            node = NodeState(name=name, down_since=self.clock())
            self.nodes[name] = node
        token = new_token()
        node.token_hash = hash_token(token)
        if labels:
            node.labels = {**node.labels, **labels}
        self.store.save_node(node)
        self.version += 1
        log.info("node %s %s by %s", name, "token rotated" if rotate_token else "added", user)
        return token

    def drain_node(self, name: str, reason: str, user: str) -> NodeState:
        """Stop placing jobs on ``name``; its running jobs finish (DRAINING, then DRAINED)."""
        if not reason.strip():
            raise UserError("a drain needs a reason (--reason TEXT)")
        node = self._admin_node(name)
        node.admin_state = DRAIN
        node.reason = reason.strip()
        node.reason_by = user
        node.reason_time = self.clock()
        self.store.save_node(node)
        self.version += 1
        log.info("node %s drained by %s: %s", name, user, node.reason)
        return replace(node)

    def resume_node(self, name: str, user: str) -> NodeState:
        """Undo a drain: the node takes jobs again."""
        node = self._admin_node(name)
        if not node.admin_state:
            raise Conflict(f"node {name!r} is not drained")
        node.admin_state = ""
        node.reason = ""
        node.reason_by = ""
        node.reason_time = None
        self.store.save_node(node)
        self.version += 1
        log.info("node %s resumed by %s", name, user)
        return replace(node)

    def remove_node(self, name: str, force: bool, user: str) -> tuple[RemoveResult, Orders]:
        """Forget ``name``; its agent is refused from then on.

        Refused while jobs run on it, unless ``force``: then each job's attempt ends NODE_FAIL
        (requeued when the job allows it) and the agent is told to stop the containers.
        """
        self._admin_node(name)
        jobs = [j for j in self.jobs.values() if j.state in ACTIVE_STATES and name in j.node_names]
        if jobs and not force:
            ids = ", ".join(j.display_id for j in jobs)
            raise Conflict(
                f"node {name!r} runs job(s) {ids}; drain it and wait, or use --force "
                "(requeues the jobs that allow it, ends the others NODE_FAIL)"
            )
        orders: Orders = []
        events: list[JobEvent] = []
        requeued: list[str] = []
        failed: list[str] = []
        why = f"node {name} removed by {user}"
        for job in jobs:
            orders.extend(self._kill_orders(job, why))
            events.extend(self._attempt_ended(job, JobState.NODE_FAIL, why, orders))
            (requeued if job.state is JobState.PENDING else failed).append(job.display_id)
        self._save(jobs, events)
        self.store.delete_node(name)
        del self.nodes[name]
        self.version += 1
        log.info("node %s removed by %s", name, user)
        return RemoveResult(tuple(requeued), tuple(failed)), orders

    def _admin_node(self, name: str) -> NodeState:
        node = self.nodes.get(name)
        if node is None:
            raise NotFound(f"node {name!r} is not registered")
        return node
