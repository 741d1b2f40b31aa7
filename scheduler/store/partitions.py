"""Stored partitions that admins made (table ``partitions``; SQLAlchemy ORM, one transaction
per method)."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from rota.scheduler.store.models import PartitionRow
from rota.scheduler.store.protocols import StoredPartition


class SqlPartitionRepository:
    """``PartitionRepository`` over a session factory."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def all(self) -> list[StoredPartition]:
        with self._sessions() as session:
            rows = session.scalars(select(PartitionRow).order_by(PartitionRow.position))
            return [
                StoredPartition(r.name, dict(r.settings or {}), r.position, r.changed_by, r.changed)
                for r in rows
            ]

    def save(self, partition: StoredPartition) -> None:
        with self._sessions.begin() as session:
            row = session.get(PartitionRow, partition.name) or PartitionRow(name=partition.name)
            row.settings = dict(partition.settings)
            row.position = partition.position
            row.changed_by = partition.changed_by
            row.changed = partition.changed
            session.add(row)

    def delete(self, name: str) -> None:
        with self._sessions.begin() as session:
            session.execute(delete(PartitionRow).where(PartitionRow.name == name))
