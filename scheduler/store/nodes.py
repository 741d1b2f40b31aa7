"""Stored nodes and their out-of-service GPUs (SQLAlchemy Core; one transaction per method)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Engine

from rota.scheduler.cluster.gpus import GpuMark
from rota.scheduler.cluster.model import AdminState, NodeState
from rota.scheduler.store.codec import inventory_from_json, inventory_to_json
from rota.scheduler.store.models import GPU_MARKS, NODES


class SqlNodeRepository:
    """``NodeRepository`` on one SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def all(self) -> list[NodeState]:
        """Every registered node as last stored (connection fields at their defaults)."""
        with self._engine.connect() as conn:
            rows = conn.execute(select(NODES).order_by(NODES.c.name)).all()
        return [
            NodeState(
                name=r.name,
                token_hash=r.token_hash,
                labels=dict(r.labels or {}),
                admin_state=AdminState(r.admin_state),
                reason=r.reason,
                reason_by=r.reason_by,
                reason_time=r.reason_time,
                inventory=inventory_from_json(r.inventory),
                address=r.address,
                last_heartbeat=r.last_seen,
            )
            for r in rows
        ]

    def save(self, node: NodeState) -> None:
        """Insert or update a node's durable fields (an UPDATE, then an INSERT when there was
        no row: every agent hello saves its node, and the ORM's load-and-flush cost ~10 ms of
        core thread per hello during a 10,000-node ramp)."""
        values = {
            "token_hash": node.token_hash,
            "labels": dict(node.labels),
            "admin_state": node.admin_state.value,
            "reason": node.reason,
            "reason_by": node.reason_by,
            "reason_time": node.reason_time,
            "inventory": inventory_to_json(node.inventory),
            "address": node.address,
            "last_seen": node.last_heartbeat,
        }
        with self._engine.begin() as conn:
            updated = conn.execute(update(NODES).where(NODES.c.name == node.name), values)
            if updated.rowcount == 0:
                conn.execute(insert(NODES), {"name": node.name, **values})

    def delete(self, name: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(delete(NODES).where(NODES.c.name == name))

    def gpu_marks(self) -> dict[str, list[GpuMark]]:
        """Every GPU taken out of service, per node name."""
        out: dict[str, list[GpuMark]] = {}
        m = GPU_MARKS.c
        with self._engine.connect() as conn:
            rows = conn.execute(
                select(m.node, m.index, m.uuid, m.reason, m.since, m.marked_by).order_by(
                    m.node, m.index
                )
            )
            for node, index, uuid, reason, since, marked_by in rows:
                out.setdefault(node, []).append(GpuMark(index, uuid, reason, since, marked_by))
        return out

    def save_gpu_marks(self, node: str, marks: Iterable[GpuMark]) -> None:
        """Replace the stored marks of one node with ``marks``."""
        rows = [
            {
                "node": node,
                "index": m.index,
                "uuid": m.uuid,
                "reason": m.reason[:512],
                "since": m.since,
                "marked_by": m.by,
            }
            for m in marks
        ]
        with self._engine.begin() as conn:
            conn.execute(delete(GPU_MARKS).where(GPU_MARKS.c.node == node))
            if rows:
                conn.execute(insert(GPU_MARKS), rows)
