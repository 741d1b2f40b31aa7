"""Attained service: GPU-seconds a job has run over its attempts, and when it was preempted.

Expand only: two nullable columns an older scheduler never reads; NULL means none yet. The
attained-service queues (docs/policy.md) read them; a requeued job keeps them.

Revision ID: 0007_attained
Revises: 0006_leader
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_attained"
down_revision = "0006_leader"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("attained", sa.Float(), nullable=True))
    op.add_column("jobs", sa.Column("preempted_at", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("preempted_at")
        batch.drop_column("attained")
