"""Alembic environment: migrations run on the connection app.store.engine.upgrade hands over."""

from alembic import context
from sqlmodel import SQLModel

import app.store.tables  # noqa: F401  (registers the tables on SQLModel.metadata)

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
