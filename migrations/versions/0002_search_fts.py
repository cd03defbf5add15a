"""full-text search: FTS5 indexes over records and the triggers that keep them in step

SQLite only (FTS5): on other dialects this migration does nothing and app.search answers 501.

- `record_search` holds one row per record: its integer key in the FTS tables, and the
  facts that filters and "related errors" need without parsing JSON (repo, class,
  background tag, file). The records table has a text primary key, so its own rowids may
  change under VACUUM or a batch migration; this key does not. Reviewed records get keys
  above REVIEWED_KEYS, drafts below, each newer record a higher key: ordering by
  (score, key) then puts reviewed before drafts on equal scores without a join per match.
- `records_fts` indexes every searchable field, extracted from the JSON document;
  `records_fts_head` only the short ones (message, class, tags, file, repo), so that "all
  words in the message" can be ranked without decoding the long prose postings of every
  common word (see app/search/). Both are contentless: the text stays in the document,
  where app.search marks the matched words, so no text is stored twice.
- Triggers on `records` keep all of it in step with every write, whoever writes (API,
  import, harvest, raw SQL): a deleted or edited record is never found by its old text.

A later migration that recreates `records` (Alembic batch mode on SQLite copies the table)
drops these triggers with it and must create them again.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_JOINED = "(SELECT group_concat(value, {sep}) FROM json_each({doc}, '$.{key}'))"
# FTS column -> the SQL that extracts its text from a record document ({doc}). Lists are
# joined by newlines so that a snippet reads as prose rather than as JSON.
_HEAD = {
    "error_message": "json_extract({doc}, '$.errorMessage')",
    "error_class": "json_extract({doc}, '$.errorClass')",
    "tags": _JOINED.replace("{sep}", "' '").replace("{key}", "tags"),
    "file_path": "json_extract({doc}, '$.filePath')",
    "repo": "json_extract({doc}, '$.repo')",
}
_BODY = {
    "documentation": "json_extract({doc}, '$.documentation')",
    "trigger_scenarios": "json_extract({doc}, '$.triggerScenarios')",
    "common_situations": "json_extract({doc}, '$.commonSituations')",
    "solutions": _JOINED.replace("{sep}", "char(10)").replace("{key}", "solutions"),
    "prevention_tips": _JOINED.replace("{sep}", "char(10)").replace("{key}", "preventionTips"),
}
_ALL = {**_HEAD, **_BODY}
_TABLES = {"records_fts": _ALL, "records_fts_head": _HEAD}
_SEARCH_FACTS = "fts_rowid, record_id, repo, error_class, background_tag, file_path"
REVIEWED_KEYS = 1 << 40


def _new_key(row: str) -> str:
    """The FTS key of a records row: the next one in its review state's range."""
    return (
        f"CASE WHEN {row}.review_state = 'reviewed' THEN (SELECT coalesce(max(fts_rowid), "
        f"{REVIEWED_KEYS}) + 1 FROM record_search WHERE fts_rowid > {REVIEWED_KEYS}) "
        "ELSE (SELECT coalesce(max(fts_rowid), 0) + 1 FROM record_search "
        f"WHERE fts_rowid < {REVIEWED_KEYS}) END"
    )


def _facts(row: str, key: str) -> str:
    """The record_search values of a records row (`new` in a trigger, `r` in the backfill)."""
    return (
        f"{key}, {row}.id, {row}.repo, {row}.error_class, "
        f"json_extract({row}.document, '$.backgroundTag'), {row}.file_path"
    )


def _values(columns: dict[str, str], row: str) -> str:
    return ", ".join(sql.format(doc=f"{row}.document") for sql in columns.values())


def _index(row: str) -> str:
    """Statements adding a records row (`new`, `r`) to both FTS tables."""
    return "".join(
        f"INSERT INTO {table}(rowid, {', '.join(columns)}) "
        f"SELECT k.fts_rowid, {_values(columns, row)} "
        f"FROM record_search k WHERE k.record_id = {row}.id;"
        for table, columns in _TABLES.items()
    )


# A contentless FTS table forgets a row only when told the exact text it was indexed with,
# which the old document still gives.
_UNINDEX = (
    "".join(
        f"INSERT INTO {table}({table}, rowid, {', '.join(columns)}) "
        f"SELECT 'delete', k.fts_rowid, {_values(columns, 'old')} "
        "FROM record_search k WHERE k.record_id = old.id;"
        for table, columns in _TABLES.items()
    )
    + "DELETE FROM record_search WHERE record_id = old.id;"
)
_INDEX = (
    f"INSERT INTO record_search({_SEARCH_FACTS}) VALUES ({_facts('new', _new_key('new'))});"
    + _index("new")
)
_STATEMENTS = (
    """CREATE TABLE record_search (
        fts_rowid INTEGER PRIMARY KEY,
        record_id TEXT NOT NULL UNIQUE,
        repo TEXT NOT NULL,
        error_class TEXT NOT NULL,
        background_tag TEXT,
        file_path TEXT
    )""",
    "CREATE INDEX ix_record_search_background_tag ON record_search(background_tag)",
    "CREATE INDEX ix_record_search_file_path ON record_search(file_path)",
    *(
        f"CREATE VIRTUAL TABLE {table} USING fts5({', '.join(columns)}, content = '', "
        "tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3')"
        for table, columns in _TABLES.items()
    ),
    f"CREATE TRIGGER records_search_insert AFTER INSERT ON records BEGIN {_INDEX} END",
    f"CREATE TRIGGER records_search_delete AFTER DELETE ON records BEGIN {_UNINDEX} END",
    # A review-state change moves the record to the other key range, so it is re-indexed too.
    "CREATE TRIGGER records_search_update AFTER UPDATE OF "
    f"id, document, repo, error_class, file_path, review_state ON records BEGIN "
    f"{_UNINDEX} {_INDEX} END",
    # What was stored before this revision.
    f"INSERT INTO record_search({_SEARCH_FACTS}) SELECT "
    + _facts(
        "r",
        f"CASE WHEN r.review_state = 'reviewed' THEN {REVIEWED_KEYS} ELSE 0 END"
        " + row_number() OVER (ORDER BY r.id)",
    )
    + " FROM records r",
    *(
        f"INSERT INTO {table}(rowid, {', '.join(columns)}) "
        f"SELECT k.fts_rowid, {_values(columns, 'r')} "
        "FROM record_search k JOIN records r ON r.id = k.record_id"
        for table, columns in _TABLES.items()
    ),
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for statement in _STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for trigger in ("insert", "delete", "update"):
        op.execute(f"DROP TRIGGER IF EXISTS records_search_{trigger}")
    for table in ("records_fts_head", "records_fts"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
    op.execute("DROP TABLE IF EXISTS record_search")
