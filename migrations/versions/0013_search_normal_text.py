"""full-text search of normalised text: NFKC and one apostrophe, alike on both engines

The index holds each searched field as app.store.fulltext.normal_text gives it (NFKC, each
apostrophe-like letter an apostrophe), and app.search normalises a query the same way: a
query in full-width letters, or with a modifier-letter apostrophe, found nothing on SQLite
and records on PostgreSQL, whose unaccent folds some of those and not others.

- SQLite: the triggers of migration 0002 index `errkb_normal_text(<field>)` (a function
  app.store.engine registers on every connection) instead of the field, and both FTS5 tables
  are rebuilt from the documents.
- PostgreSQL: `errkb_words_vector` (migration 0008) normalises its text with the same
  NFKC (`normalize`, a UTF-8 database) and apostrophes before `unaccent`, and every vector
  is computed again.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04
"""

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

from app.store.fulltext import APOSTROPHES, BODY_FIELDS, HEAD_FIELDS, NORMAL_TEXT_SQL

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# SQLite: FTS column -> the SQL of its text in a record document ({doc}), as migration 0002
# extracts it; lists joined by a space (tags) or a newline (solutions, tips).
_JOINED = "(SELECT group_concat(value, {sep}) FROM json_each({{doc}}, '$.{key}'))"
_FIELDS = {
    field.column: (
        _JOINED.format(sep="' '" if field.joiner == " " else "char(10)", key=field.key)
        if field.joiner
        else f"json_extract({{doc}}, '$.{field.key}')"
    )
    for field in (*HEAD_FIELDS, *BODY_FIELDS)
}
_TABLES = {
    "records_fts": list(_FIELDS),
    "records_fts_head": [field.column for field in HEAD_FIELDS],
}
_TRIGGERS = ("records_search_insert", "records_search_delete", "records_search_update")


def _values(columns: list[str], row: str, normal: bool) -> str:
    values = (_FIELDS[column].format(doc=f"{row}.document") for column in columns)
    return ", ".join(f"{NORMAL_TEXT_SQL}({value})" if normal else value for value in values)


def _rewritten(trigger_sql: str, normal: bool) -> str:
    """A trigger of migration 0002 indexing (or forgetting) each field as normalised text
    (`normal`), or as the field itself."""
    for columns in _TABLES.values():
        for row in ("new", "old"):
            trigger_sql = trigger_sql.replace(
                _values(columns, row, not normal), _values(columns, row, normal)
            )
    return trigger_sql


def _rebuild_sqlite(normal: bool) -> None:
    connection = op.get_bind()
    for name in _TRIGGERS:
        sql = connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)
        ).scalar_one()
        rewritten = _rewritten(sql, normal)
        if rewritten == sql:
            raise RuntimeError(f"trigger {name} is not the one migration 0002 made")
        op.execute(f"DROP TRIGGER {name}")
        op.execute(rewritten)
    for table, columns in _TABLES.items():
        op.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
        op.execute(
            f"INSERT INTO {table}(rowid, {', '.join(columns)}) "
            f"SELECT k.fts_rowid, {_values(columns, 'r', normal)} "
            "FROM record_search k JOIN records r ON r.id = k.record_id"
        )


def _words_vector(normal: bool) -> str:
    text = "coalesce(words, '')"
    if normal:
        quote = "'" * 2
        text = f"translate(normalize({text}, NFKC), '{APOSTROPHES}', '{quote * len(APOSTROPHES)}')"
    return f"""CREATE OR REPLACE FUNCTION errkb_words_vector(words text, label "char")
    RETURNS tsvector LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT setweight(to_tsvector('simple', unaccent(
            regexp_replace({text}, '[^[:alnum:]]+', ' ', 'g'))), label)
    $$"""


def _migration(file_name: str) -> ModuleType:
    """Another migration of this folder, for what it built (its file name is no module
    name Python imports)."""
    spec = importlib.util.spec_from_file_location(file_name, Path(__file__).with_name(file_name))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rebuild_postgres(normal: bool) -> None:
    vector = _migration("0008_search_postgres.py")._vector  # the vectors as 0008 builds them
    op.execute(_words_vector(normal))
    op.execute(
        f"""UPDATE record_search k SET head_tsv = v.head, full_tsv = v.head || v.body
        FROM (SELECT r.id, {vector(HEAD_FIELDS)} AS head, {vector(BODY_FIELDS)} AS body
              FROM (SELECT id, document::jsonb AS d FROM records) r) v
        WHERE k.record_id = v.id"""
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite(normal=True)
    else:
        _rebuild_postgres(normal=True)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite(normal=False)
    else:
        _rebuild_postgres(normal=False)
