"""Fixtures: every test builds its own app on its own temporary database.

That is a SQLite file always and, when ERRKB_TEST_POSTGRES_URL names a PostgreSQL database,
a schema of its own in that database too: each test that uses `settings` (and so `session`,
`make_client`, `client`) runs once per engine, `[sqlite]` and `[postgresql]`.
Tests marked `postgresql_only` exercise what only PostgreSQL has (concurrent writers) and
are skipped without it; tests marked `sqlite_only` are about SQLite's own locking.
"""

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.config import Settings
from app.main import create_app
from app.store.engine import open_store
from tests.helpers import accuracy, postgres, served
from tests.helpers.records import DATA_DIR, curated_records
from tests.helpers.servers import ADMIN_TOKEN, uvicorn_server

HISTORY_STORE = os.environ.get("ERRKB_TEST_HISTORY_STORE") or None


@pytest.fixture(scope="session")
def harvested(tmp_path_factory: pytest.TempPathFactory) -> accuracy.Harvested:
    """One store harvested from the current vLLM, SGLang and torch and two older vLLM
    releases, shared by the tests that score real errors: harvesting is most of their
    time."""
    return accuracy.harvested_store(tmp_path_factory.mktemp("harvested"))


@pytest.fixture(scope="session")
def harvested_history(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> accuracy.Harvested:
    """The shared store, the curated records of data/records and the older releases real
    pastes come from (accuracy.OLDER), in a copy of its own: the real-paste measure answers
    as the default serve does once its older releases are in, and the other tests keep the
    store they were written for.

    With ERRKB_TEST_HISTORY_STORE naming an SQLite store the default serve built (every
    release it harvests: `bench/bench_store.py --sections build` makes one), a copy of that
    store is used instead, nothing harvested: the rates reported from the whole history."""
    folder = tmp_path_factory.mktemp("history")
    if HISTORY_STORE:
        return accuracy.harvested_store(folder, (), start_from=Path(HISTORY_STORE))
    harvested: accuracy.Harvested = request.getfixturevalue("harvested")
    return accuracy.harvested_store(
        folder, accuracy.OLDER, start_from=harvested.database, curated=DATA_DIR
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run the tests that use the store once per engine (only SQLite without PostgreSQL)."""
    if "store_engine" in metafunc.fixturenames:
        engines = postgres.ENGINES
        if metafunc.definition.get_closest_marker("postgresql_only"):
            engines = [postgres.POSTGRESQL] if postgres.POSTGRES_URL else []
        elif metafunc.definition.get_closest_marker("sqlite_only"):
            engines = [postgres.SQLITE]
        metafunc.parametrize("store_engine", engines, indirect=True)


@pytest.fixture
def store_engine(request: pytest.FixtureRequest) -> str:
    """The engine this run of the test stores records in."""
    return request.param


@pytest.fixture
def database_url(store_engine: str, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database: a SQLite file, or a PostgreSQL schema dropped afterwards."""
    if store_engine == postgres.SQLITE:
        yield f"sqlite:///{tmp_path / 'errkb.db'}"
        return
    with postgres.fresh_schema() as url:
        yield url


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Settings on a fresh database, with an admin token for write tests."""
    return Settings(
        database_url=database_url,
        admin_token=ADMIN_TOKEN,
        cache_dir=tmp_path / "cache",
        older_releases=[],  # a test that harvests on start names what it harvests
        settle_heap=False,  # frozen objects of one test's app would outlive it
    )


@pytest.fixture
def session(settings: Settings) -> Iterator[Session]:
    """A session on the migrated, empty test database."""
    with Session(open_store(settings)) as session:
        yield session


@pytest.fixture
def make_client(settings: Settings) -> Callable[..., TestClient]:
    """Build a client on the test database, optionally importing record files first."""

    def build(*import_paths: Path, **overrides) -> TestClient:
        app_settings = settings.model_copy(update=overrides)
        app = create_app(app_settings)
        if import_paths:
            from app.records.service import import_paths as do_import
            from app.store.engine import unit_of_work

            with unit_of_work(app.state.services.engine) as session:
                report = do_import(session, list(import_paths))
                assert report.written, report.rejected
        return TestClient(app)

    return build


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    """A client on a database holding the records of data/."""
    return make_client(DATA_DIR)


@pytest.fixture
def seed_records() -> dict[str, dict]:
    """The records of data/, by id."""
    return curated_records()


@pytest.fixture
def auth() -> dict[str, str]:
    """Headers that carry the admin token."""
    return {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """uvicorn on 127.0.0.1 at a free port over a fresh database; stopped afterwards."""
    database = tmp_path / "errkb.db"
    env = {
        "ERRKB_DATABASE_URL": f"sqlite:///{database}",
        "ERRKB_ADMIN_TOKEN": ADMIN_TOKEN,
        "ERRKB_CACHE_DIR": str(tmp_path / "cache"),
        "ERRKB_PASTE_BUDGET_BYTES": "0",  # hostile load from one address must reach matching
    }
    with uvicorn_server(env, "/healthz") as base:
        yield base, database


@pytest.fixture(scope="session")
def errkb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real `errkb serve` holding the records of data/, shared by the client's tests
    (they only read); its base URL."""
    with served.errkb_serve(tmp_path_factory.mktemp("errkb-serve")) as base:
        yield base


@pytest.fixture
def silent_server() -> Iterator[str]:
    """The URL of a listener that accepts connections and never answers."""
    with served.silent_server() as url:
        yield url


@pytest.fixture
def served_store(settings: Settings, tmp_path: Path) -> Iterator[str]:
    """uvicorn on 127.0.0.1 over the test's store (either engine) holding the records of
    data/, once /readyz answers 200 (the match index is loaded); stopped afterwards."""
    from app.records.service import import_paths
    from app.store.engine import unit_of_work

    with unit_of_work(open_store(settings)) as session:
        assert import_paths(session, [DATA_DIR]).written
    env = {
        "ERRKB_DATABASE_URL": settings.database_url,
        "ERRKB_ADMIN_TOKEN": ADMIN_TOKEN,
        "ERRKB_CACHE_DIR": str(tmp_path / "served-cache"),
        "ERRKB_OLDER_RELEASES": "[]",
    }
    with uvicorn_server(env, "/readyz") as base:
        yield base
