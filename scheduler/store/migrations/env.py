"""Alembic's environment for rota: run by ``rota.scheduler.store.schema`` (``rota db ...``
and the scheduler's start), which hands over an open connection in
``config.attributes["connection"]``; there is no ``alembic.ini``."""

from __future__ import annotations

from alembic import context

from rota.scheduler.store.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,  # SQLite alters a table by copying it
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
