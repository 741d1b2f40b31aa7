"""Partitions: the partition each job was placed in (``jobs.placed_partition``).

Expand only: a nullable column an older scheduler never reads; NULL for jobs placed before.
A job's requested partitions live in its stored spec (``partition``), which needs no column.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("placed_partition", sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("placed_partition")
