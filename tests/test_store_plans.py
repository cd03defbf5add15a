"""Every query a hot path runs is served by an index, on both engines.

A match, a record page and its JSON twin, a search, a listing and the curation queue are
called through the app on a store shaped like a harvested one (thousands of drafts, their
locations in several releases, hits); each statement they send is captured and explained.
A full scan of records, record_locations, hits, their totals or the search tables fails the
test: on the default store with its older releases one such scan per request was most of a
request's time.
"""

import re
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.config import Settings
from app.main import create_app
from app.store.engine import unit_of_work
from tests.helpers import postgres
from tests.helpers.statements import captured
from tests.helpers.synthetic import fill_located_store, synthetic_paste

RECORDS = 3000
WATCHED = ("records", "record_locations", "hits", "hit_totals", "record_search", "record_tags")
# SQLite: "SCAN records" alone is a read of every row; "SCAN ... USING INDEX" walks an index
# in order (a listing's page, stopped by its LIMIT) and FTS5 answers MATCH from its index.
_SQLITE_SCAN = re.compile(rf"^SCAN ({'|'.join(WATCHED)})(?: AS \w+)?$")
_POSTGRES_SCAN = re.compile(rf"Seq Scan on ({'|'.join(WATCHED)})\b")


def full_scans(engine: Engine, statement: str, parameters: Any) -> list[str]:
    """The lines of the statement's plan that read a watched table in full."""
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            return [row[-1] for row in rows if _SQLITE_SCAN.match(row[-1])]
        # PostgreSQL prefers a sequential scan of a small table even where an index serves;
        # with sequential scans priced out, one that remains has no index to use instead.
        connection.exec_driver_sql("SET enable_seqscan = off")
        rows = connection.exec_driver_sql(f"EXPLAIN {statement}", parameters)
        found = [row[0] for row in rows if _POSTGRES_SCAN.search(row[0])]
        connection.rollback()
        return found


@pytest.fixture
def located(make_client: Callable[..., TestClient]) -> tuple[TestClient, list[dict]]:
    """A client on a store of RECORDS synthetic drafts with locations and hits."""
    client = make_client()
    with unit_of_work(client.app.state.services.engine) as session:  # type: ignore[attr-defined]
        stored = fill_located_store(session, RECORDS)
    return client, stored


def hot_paths(client: TestClient, stored: list[dict]) -> dict[str, Callable[[], Any]]:
    """Each hot path as one request; every one must answer 200."""
    record = stored[6]  # located in every release but the last: its history has "changed in"
    owner, repo = record["repo"].split("/")
    paste = synthetic_paste(record)
    return {
        "match": lambda: client.post("/api/match", content=paste),
        "match page": lambda: client.post("/match", data={"text": paste}),
        "record json": lambda: client.get(f"/api/errors/{record['id']}"),
        "record page": lambda: client.get(f"/errors/{record['id']}"),
        "record by slug": lambda: client.get(
            f"/api/errors/by-slug/{owner}/{repo}/{record['slug']}"
        ),
        "listing": lambda: client.get("/api/errors?limit=50"),
        "listing next page": lambda: client.get(
            "/api/errors", params={"cursor": client.get("/api/errors").json()["nextCursor"]}
        ),
        "listing by repo": lambda: client.get("/api/errors", params={"repo": record["repo"]}),
        "listing by class": lambda: client.get("/api/errors?errorClass=ValueError"),
        "listing by tag": lambda: client.get("/api/errors", params={"tag": record["tags"][0]}),
        "listing by state": lambda: client.get("/api/errors?reviewState=draft"),
        "listing by severity": lambda: client.get("/api/errors?severity=error"),
        "listing by type": lambda: client.get("/api/errors?errorType=exception"),
        "listing by strategy": lambda: client.get("/api/errors?handlingStrategy=validation"),
        "search": lambda: client.get("/api/search?q=buffer+pool"),
        "search filtered": lambda: client.get(
            "/api/search", params={"q": "tensor", "repo": record["repo"]}
        ),
        "search page": lambda: client.get("/search?q=buffer+pool"),
        "home": lambda: client.get("/"),
        "curation queue": lambda: client.get("/api/curation/queue?limit=20"),
        "curation queue next page": lambda: client.get(
            "/api/curation/queue",
            params={"cursor": client.get("/api/curation/queue?limit=20").json()["nextCursor"]},
        ),
        "curation queue by repo": lambda: client.get(
            "/api/curation/queue", params={"repo": record["repo"]}
        ),
    }


def test_hot_paths_scan_no_table(located: tuple[TestClient, list[dict]]) -> None:
    client, stored = located
    engine = client.app.state.services.engine  # type: ignore[attr-defined]
    paths = hot_paths(client, stored)
    for call in paths.values():  # the match index is built once, before any is timed
        assert call().status_code == 200
    assert "changed in 0.3.0" in paths["record json"]().text  # the history asks per release
    scans: dict[str, list[str]] = {}
    explained = 0
    for name, call in paths.items():
        with captured(engine) as statements:
            response = call()
        assert response.status_code == 200, (name, response.text[:300])
        assert statements, f"{name} sent no statement: the capture missed it"
        for statement, parameters in statements:
            explained += 1
            found = full_scans(engine, statement, parameters)
            if found:
                scans[f"{name}: {' '.join(statement.split())[:300]}"] = found
    assert explained > len(paths)
    assert not scans, "\n".join(f"{where}: {found}" for where, found in scans.items())


def test_a_full_scan_is_caught(located: tuple[TestClient, list[dict]]) -> None:
    """The check itself: a query no index serves is reported."""
    engine = located[0].app.state.services.engine  # type: ignore[attr-defined]
    assert full_scans(engine, "SELECT id FROM records WHERE length(document) > 5", ())


@contextmanager
def store_of(settings: Settings, tmp_path: Path, size: int) -> Iterator[tuple[TestClient, list]]:
    """A client on a new store of `size` located synthetic drafts, on the test's engine."""
    with ExitStack() as stack:
        if settings.database_url.startswith("sqlite"):
            url = f"sqlite:///{tmp_path / f'store-{size}.db'}"
        else:
            url = stack.enter_context(postgres.fresh_schema())
        # Hits are written every few seconds by whichever request finds them due, and the
        # index is brought up to date by a thread of its own: neither is a request's work.
        quiet = {"database_url": url, "record_hits": False, "index_poll_s": 0}
        app = create_app(settings.model_copy(update=quiet))
        with unit_of_work(app.state.services.engine) as session:
            stored = fill_located_store(session, size)
        client = stack.enter_context(TestClient(app))
        wait_for_start_up(client)
        yield client, stored
        app.state.services.engine.dispose()


def wait_for_start_up(client: TestClient, within_s: float = 60.0) -> None:
    """Until /readyz answers 200: the start-up thread loads the match index through the same
    engine, and its statements must not be counted as a request's."""
    deadline = time.monotonic() + within_s
    while client.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline, client.get("/readyz").json()
        time.sleep(0.02)


def statements_per_request(client: TestClient, record: dict) -> dict[str, int]:
    """How many statements a match of the record's error, a GET of it and a page of the
    listing send, once the first of each has run (a new store version's values are
    computed once). The listing's total is one of those values: a page after the first
    counts no records."""
    requests = {
        "match": lambda: client.post("/api/match", content=synthetic_paste(record)),
        "get": lambda: client.get(f"/api/errors/{record['id']}"),
        "listing": lambda: client.get("/api/errors?limit=50"),
    }
    engine = client.app.state.services.engine  # type: ignore[attr-defined]
    counts = {}
    for name, call in requests.items():
        first = call()
        assert first.status_code == 200, first.text[:300]
        with captured(engine, everything=True) as statements:
            assert call().status_code == 200
        counts[name] = len(statements)
        counted = [text for text, _ in statements if "count(" in text.lower()]
        assert not counted, (name, counted)
    return counts


def test_queries_per_request_do_not_grow_with_the_store(settings: Settings, tmp_path: Path):
    """One match and one GET send as many statements on 2,000 records as on 50: what
    depends on the store's size is looked up through an index or computed once."""
    counts = {}
    for size in (50, 2000):
        with store_of(settings, tmp_path, size) as (client, stored):
            # the same shape in both stores: located, changed in 0.3.0
            counts[size] = statements_per_request(client, stored[6])
    assert counts[50] == counts[2000], counts
    assert counts[50]["get"] <= 6, counts  # the record, the version, runs, drift
    assert counts[50]["listing"] <= 4, counts  # the version, the page's ids, their records
    # the version alone (and SQLite's BEGIN): what a match reads of its candidates, their
    # locations and history, is kept per dataset version
    assert counts[50]["match"] <= 2, counts


def test_a_write_counts_the_listing_again(
    settings: Settings, tmp_path: Path, auth: dict[str, str]
) -> None:
    """The listing's total is kept per dataset version and filters; a write moves the
    version, so the next page counts again and shows the record written, then deleted."""
    with store_of(settings, tmp_path, 50) as (client, stored):
        # another raise site: a record written at a draft's site would absorb the draft
        record = dict(stored[0], id="00000000000000ff", filePath="vllm/written_later.py")
        filters = f"limit=5&errorClass={record['errorClass']}"

        def totals() -> tuple[int, int]:
            every, some = client.get("/api/errors?limit=5"), client.get(f"/api/errors?{filters}")
            assert every.status_code == some.status_code == 200, (every.text, some.text)
            return every.json()["total"], some.json()["total"]

        everything, same_class = totals()
        assert totals() == (everything, same_class)  # kept: the same answer
        created = client.post("/api/errors", json=record, headers=auth)
        assert created.status_code == 201, created.text[:300]
        assert totals() == (everything + 1, same_class + 1)
        assert client.delete(f"/api/errors/{record['id']}", headers=auth).status_code == 204
        assert totals() == (everything, same_class)
