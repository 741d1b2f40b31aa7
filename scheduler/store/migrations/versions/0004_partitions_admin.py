"""Partitions admins make at run time (``gadmin partition``): table ``partitions``; job mail
still to send (sbatch ``--mail-type``): table ``mails``.

Expand only: new tables an older scheduler never reads. Partitions of the settings file are
not stored.

Revision ID: 0004_partitions_admin
Revises: 0003_web_sessions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_partitions_admin"
down_revision = "0003_web_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "partitions",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("changed_by", sa.String(length=128), nullable=False),
        sa.Column("changed", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "mails",
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("to", sa.String(length=320), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("next_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"]),
        sa.PrimaryKeyConstraint("job_id", "attempt", "kind"),
    )
    op.create_index(op.f("ix_mails_next_at"), "mails", ["next_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_mails_next_at"), table_name="mails")
    op.drop_table("mails")
    op.drop_table("partitions")
