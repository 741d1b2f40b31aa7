"""High availability: the scheduler lease (``leader``, one row) that schedulers sharing one
PostgreSQL database elect their leader with (``store/lease.py``).

Expand only: a new table an older scheduler never reads.

Revision ID: 0006_leader
Revises: 0005_noshow_notify
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_leader"
down_revision = "0005_noshow_notify"
branch_labels = None
depends_on = None


def upgrade() -> None:
    leader = op.create_table(
        "leader",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("holder", sa.String(length=256), nullable=False),
        sa.Column("renewed_at", sa.Float(), nullable=False),
        sa.Column("locked", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.bulk_insert(
        leader, [{"id": 1, "epoch": 0, "holder": "", "renewed_at": 0.0, "locked": False}]
    )


def downgrade() -> None:
    op.drop_table("leader")
