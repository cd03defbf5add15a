"""Alembic environment: migrations run on the connection app.store.engine.upgrade hands over."""

from alembic import context
from sqlmodel import SQLModel

import app.store.tables  # noqa: F401  (registers the tables on SQLModel.metadata)

connection = context.config.attributes["connection"]
# PostgreSQL: the version table of the connection's own schema. With a search path of several
# schemas (a store's own, then `public` for an extension), an alembic_version found further
# along the path is another store's: taken for this one's, no migration ran here and every
# table resolved to the other store's.
own_schema = (
    connection.dialect.default_schema_name if connection.dialect.name == "postgresql" else None
)
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    version_table_schema=own_schema,
)
with context.begin_transaction():
    context.run_migrations()
