"""full-text search on PostgreSQL: weighted tsvectors, GIN indexes, statement triggers

PostgreSQL only; on SQLite, migration 0002's FTS5 tables do this job and this one does nothing.

- `record_search` is the facts table of migration 0002 (key, record id, repo, class,
  background tag, file) plus `head_tsv` (the short fields) and `full_tsv` (every searched
  field), each word labelled A-D with its field's weight (app.store.fulltext), GIN-indexed.
- Keys come from two sequences, reviewed records above REVIEWED_KEYS and drafts below, each
  newer record a higher key, as on SQLite: safe under concurrent writers, where max() + 1
  is not.
- `errkb_words_vector` indexes text the way FTS5's unicode61 tokenizer does (runs of
  characters other than letters and digits separate words; accents removed by `unaccent`,
  a trusted extension a database owner may create; case folded), once per weight label
  over the text of that label's fields (`errkb_field_text`: a string, or a list's items).
- Statement-level triggers with transition tables keep it in step with every write, whoever
  writes; a large insert (an import, a harvest) is indexed in one statement, not row by row.
  An update re-indexes (with a new key) only the rows whose searched columns changed.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from alembic import op

from app.store.fulltext import BODY_FIELDS, HEAD_FIELDS, REVIEWED_KEYS

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _vector(fields) -> str:
    """The tsvector of these fields: one to_tsvector per weight label, over its fields' text
    joined in declaration order (a call per field cost twice as much on a large import)."""
    labels = dict.fromkeys(field.label for field in fields)
    return " || ".join(
        "errkb_words_vector(concat_ws(' ', "
        + ", ".join(f"errkb_field_text(r.d -> '{f.key}')" for f in fields if f.label == label)
        + f"), '{label}')"
        for label in labels
    )


def _index(source: str) -> str:
    """INSERT indexing the records of `source` (a relation of records rows). Each document
    is parsed once: the CTEs are materialized, else each of the ten field references would
    parse it again (ten times the cost of a large import)."""
    return f"""WITH r AS MATERIALIZED (
        SELECT s.id, s.repo, s.error_class, s.review_state, s.file_path,
               s.document::jsonb AS d
        FROM {source} s
    ), v AS MATERIALIZED (
        SELECT r.id, r.repo, r.error_class, r.review_state, r.file_path,
               r.d ->> 'backgroundTag' AS background_tag,
               {_vector(HEAD_FIELDS)} AS head, {_vector(BODY_FIELDS)} AS body
        FROM r
    )
    INSERT INTO record_search
        (fts_rowid, record_id, repo, error_class, background_tag, file_path, head_tsv, full_tsv)
    SELECT
        CASE WHEN v.review_state = 'reviewed' THEN nextval('record_search_reviewed_keys')
             ELSE nextval('record_search_draft_keys') END,
        v.id, v.repo, v.error_class, v.background_tag, v.file_path, v.head, v.head || v.body
    FROM v"""


_SEARCHED_SAME = (
    "n.id = o.id AND n.document = o.document AND n.repo = o.repo"
    " AND n.error_class = o.error_class AND n.file_path IS NOT DISTINCT FROM o.file_path"
    " AND n.review_state = o.review_state"
)
_TRIGGERS = {
    # event: (transition tables, body)
    "insert": ("NEW TABLE AS new_rows", _index("new_rows") + ";"),
    "update": (
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        "DELETE FROM record_search k USING old_rows o WHERE k.record_id = o.id"
        f" AND NOT EXISTS (SELECT 1 FROM new_rows n WHERE {_SEARCHED_SAME});"
        + _index(
            "(SELECT * FROM new_rows n WHERE NOT EXISTS"
            " (SELECT 1 FROM record_search k WHERE k.record_id = n.id))"
        )
        + ";",
    ),
    "delete": (
        "OLD TABLE AS old_rows",
        "DELETE FROM record_search k USING old_rows o WHERE k.record_id = o.id;",
    ),
}
_STATEMENTS = (
    "CREATE EXTENSION IF NOT EXISTS unaccent",
    f"CREATE SEQUENCE record_search_draft_keys MINVALUE 1 MAXVALUE {REVIEWED_KEYS}",
    f"CREATE SEQUENCE record_search_reviewed_keys START {REVIEWED_KEYS + 1}",
    """CREATE TABLE record_search (
        fts_rowid BIGINT PRIMARY KEY,
        record_id TEXT NOT NULL UNIQUE,
        repo TEXT NOT NULL,
        error_class TEXT NOT NULL,
        background_tag TEXT,
        file_path TEXT,
        head_tsv TSVECTOR NOT NULL,
        full_tsv TSVECTOR NOT NULL
    )""",
    # Compressed but kept in the row: ranking reads the vector of every match, and fetching
    # each from the TOAST table took 60 % of a one-word search over 50k records.
    "ALTER TABLE record_search ALTER COLUMN head_tsv SET STORAGE MAIN,"
    " ALTER COLUMN full_tsv SET STORAGE MAIN",
    "CREATE INDEX ix_record_search_background_tag ON record_search (background_tag)",
    "CREATE INDEX ix_record_search_file_path ON record_search (file_path)",
    "CREATE INDEX ix_record_search_head_tsv ON record_search USING gin (head_tsv)",
    "CREATE INDEX ix_record_search_full_tsv ON record_search USING gin (full_tsv)",
    """CREATE FUNCTION errkb_field_text(value jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT CASE jsonb_typeof(value)
            WHEN 'string' THEN value #>> '{}'
            WHEN 'array' THEN
                (SELECT string_agg(item, ' ') FROM jsonb_array_elements_text(value) item)
        END
    $$""",
    """CREATE FUNCTION errkb_words_vector(words text, label "char") RETURNS tsvector
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT setweight(to_tsvector('simple', unaccent(
            regexp_replace(coalesce(words, ''), '[^[:alnum:]]+', ' ', 'g'))), label)
    $$""",
    *(
        statement
        for event, (tables, body) in _TRIGGERS.items()
        for statement in (
            f"CREATE FUNCTION records_search_{event}() RETURNS trigger LANGUAGE plpgsql AS $$"
            f" BEGIN {body} RETURN NULL; END $$",
            f"CREATE TRIGGER records_search_{event} AFTER {event.upper()} ON records"
            f" REFERENCING {tables} FOR EACH STATEMENT"
            f" EXECUTE FUNCTION records_search_{event}()",
        )
    ),
    # What was stored before this revision, oldest write first.
    _index("(SELECT * FROM records ORDER BY modified_at, id)"),
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in _STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for event in _TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS records_search_{event} ON records")
        op.execute(f"DROP FUNCTION IF EXISTS records_search_{event}()")
    op.execute('DROP FUNCTION IF EXISTS errkb_words_vector(text, "char")')
    op.execute("DROP FUNCTION IF EXISTS errkb_field_text(jsonb)")
    op.execute("DROP TABLE IF EXISTS record_search")
    op.execute("DROP SEQUENCE IF EXISTS record_search_reviewed_keys")
    op.execute("DROP SEQUENCE IF EXISTS record_search_draft_keys")
