"""The local store answering the client's questions in the API's own JSON shapes, so that
`errkb match|search|show` print the same with or without `--server`, and the hook, the
plugin and `errkb run` work with no server at all.

Imported only when no server is configured: it brings the store, the matcher and the wire
models, which a program being explained should not pay for otherwise.
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlmodel import Session

from app.app_error import AppError
from app.client.http import ClientError
from app.config import Settings
from app.matching.matcher import Matcher
from app.matching.service import match_text
from app.records import locations
from app.records import service as records
from app.records.filters import RecordFilters
from app.search.service import search, search_page
from app.serving.views import record_document_json, record_view
from app.store.engine import is_sqlite, open_store


class LocalStore:
    """Match, search and read records in the configured database, answered as the API does."""

    def __init__(self, settings: Settings, create: bool = True) -> None:
        """`create=False` refuses a SQLite file that does not exist yet instead of creating
        an empty store: the hook must not leave a database behind in a user's folder."""
        if not create and is_sqlite(settings.database_url):
            database = make_url(settings.database_url).database
            if not database or not Path(database).exists():
                raise ClientError(f"no local store at {database or settings.database_url}")
        self.settings = settings
        self.engine = open_store(settings)
        self.matcher = Matcher(
            self.engine, settings.cache_dir, settings.max_paste_bytes, settings.match_deadline_s
        )

    def match(self, text: str, limit: int) -> dict[str, Any]:
        """POST /api/match's JSON."""
        with Session(self.engine) as session:
            try:
                result = match_text(self.matcher, session, text, limit)
            except AppError as error:
                raise ClientError(error.detail, error.status) from None
        return json.loads(result.model_dump_json(by_alias=True))

    def search(
        self, query: str, filters: Mapping[str, str], limit: int, cursor: str | None
    ) -> dict[str, Any]:
        """GET /api/search's JSON; `filters` are its query parameters (repo, errorClass...)."""
        with Session(self.engine) as session:
            try:
                results = search(
                    session,
                    query,
                    RecordFilters.model_validate(filters),
                    limit=limit,
                    cursor=cursor,
                    matcher=self.matcher,
                )
            except AppError as error:
                raise ClientError(error.detail, error.status) from None
            page = search_page(results, records.dataset_version(session))
        return json.loads(page.model_dump_json(by_alias=True))

    def record(self, record_id: str) -> dict[str, Any]:
        """GET /api/errors/{id}'s JSON; an absorbed draft's id gives the record that took it."""
        with Session(self.engine) as session:
            stored = records.get_record(session, record_id)
            if stored is None:
                target = locations.resolve_alias(session, record_id)
                stored = None if target is None else records.get_record(session, target)
            if stored is None:
                raise ClientError(f"record {record_id} does not exist", 404)
            view = record_view(session, self.settings, stored)
            return json.loads(record_document_json(view))

    def link(self, record_id: str) -> str:
        """With no server there is no page to link to: the command that prints it."""
        return f"errkb show {record_id}"
