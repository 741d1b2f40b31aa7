"""Dashboard sessions kept in the database (``web_sessions``), so a restarted scheduler keeps
everyone logged in; the no-show rule's policy and state of each reservation
(``reservations.unused``, ``reservations.given_back``) and how each ended window was spent
(``booking_usage``, for ``gacct --summary``).

Expand only: new tables and two columns with server defaults that an older scheduler never
reads (its logins stay in its memory; its reservations are never given back).

Revision ID: 0003_web_sessions
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_web_sessions"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "booking_usage",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("user", sa.String(length=128), nullable=False),
        sa.Column("start", sa.Float(), nullable=False),
        sa.Column("end", sa.Float(), nullable=False),
        sa.Column("booked", sa.Float(), nullable=False),
        sa.Column("used", sa.Float(), nullable=False),
        sa.Column("lent", sa.Float(), nullable=False),
        sa.Column("released", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("booking_usage") as batch:
        batch.create_index(batch.f("ix_booking_usage_end"), ["end"], unique=False)
    with op.batch_alter_table("reservations") as batch:
        batch.add_column(
            sa.Column("unused", sa.String(length=16), nullable=False, server_default="lend")
        )
        batch.add_column(sa.Column("given_back", sa.Float(), nullable=False, server_default="0"))
    op.create_table(
        "web_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("user", sa.String(length=128), nullable=False),
        sa.Column("token_hash", sa.String(length=128), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("seen", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id_hash"),
    )
    with op.batch_alter_table("web_sessions") as batch:
        batch.create_index("ix_web_sessions_user", ["user", "created"], unique=False)
        batch.create_index(batch.f("ix_web_sessions_seen"), ["seen"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("web_sessions") as batch:
        batch.drop_index(batch.f("ix_web_sessions_seen"))
        batch.drop_index("ix_web_sessions_user")
    op.drop_table("web_sessions")
    with op.batch_alter_table("booking_usage") as batch:
        batch.drop_index(batch.f("ix_booking_usage_end"))
    op.drop_table("booking_usage")
    with op.batch_alter_table("reservations") as batch:
        batch.drop_column("given_back")
        batch.drop_column("unused")
