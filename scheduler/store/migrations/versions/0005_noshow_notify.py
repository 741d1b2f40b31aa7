"""Mail to the owners of a reservation the no-show rule gave back: table ``booking_mails``.

Expand only: a new table an older scheduler never reads.

Revision ID: 0005_noshow_notify
Revises: 0004_partitions_admin
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_noshow_notify"
down_revision = "0004_partitions_admin"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "booking_mails",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("reservation", sa.String(length=128), nullable=False),
        sa.Column("to", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("next_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_booking_mails_next_at"), "booking_mails", ["next_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_booking_mails_next_at"), table_name="booking_mails")
    op.drop_table("booking_mails")
