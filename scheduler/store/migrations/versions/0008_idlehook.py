"""Idle rules' webhooks (``idle_warning``, ``idle_end``) still to deliver: table ``job_webhooks``.

Expand only: a new table an older scheduler never reads.

Revision ID: 0008_idlehook
Revises: 0007_attained
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_idlehook"
down_revision = "0007_attained"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_webhooks",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("next_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_job_webhooks_job_id"), "job_webhooks", ["job_id"], unique=False)
    op.create_index(op.f("ix_job_webhooks_next_at"), "job_webhooks", ["next_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_job_webhooks_next_at"), table_name="job_webhooks")
    op.drop_index(op.f("ix_job_webhooks_job_id"), table_name="job_webhooks")
    op.drop_table("job_webhooks")
