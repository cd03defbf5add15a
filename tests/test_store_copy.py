"""`errkb db copy`: a store copied to another engine and back is the same store,
row for row, and its export is the same bytes; a target holding rows is refused."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlmodel import Session
from typer.testing import CliRunner

from app.cli.commands import app as cli
from app.config import Settings
from app.curation.hits import RECORD, TEMPLATE, HitCounter
from app.records import service as records
from app.reproducers import drift, runner
from app.search import service as search
from app.store.copy import TABLES
from app.store.engine import open_store, unit_of_work
from tests.helpers import postgres
from tests.helpers.harvested import harvest_into
from tests.helpers.records import DATA_DIR

pytestmark = pytest.mark.network  # downloads from the package index

SEED = "b6bab2e17ae18394"


def _fill(engine: Engine, tmp_path: Path) -> None:
    """Drafts with locations and code context, a draft absorbed into a curated record (an
    alias), a reproducer run, a drift check, hits, and the dataset version they moved."""
    with unit_of_work(engine) as session:
        harvest_into(session, tmp_path)  # before data/: its seed then absorbs NO_SPACE
        assert records.import_paths(session, [DATA_DIR]).written
        started = datetime(2026, 12, 1, 8, 30, 15, 123456, tzinfo=UTC)
        result = {"status": "passed", "trigger": {"status": "passed"}, "fix": None}
        outcome = runner.RunOutcome(SEED, "cpu", "passed", "ok", 1.25, "tail\n", result, started)
        runner.store_run(session, outcome)
        checked = drift.DriftOutcome(SEED, "vllm", "0.33.0", "moved", 412, "line moved by 3")
        drift.store_drift(session, checked)
        session.commit()
    hits = HitCounter(engine, enabled=True)
    hits.add(RECORD, SEED)
    hits.add(RECORD, SEED)
    hits.add(TEMPLATE, "KeyError: <str>")
    assert hits.flush() == 2


def _tables(engine: Engine) -> dict[str, list[tuple]]:
    with engine.connect() as connection:
        return {
            table.name: [
                tuple(row)
                for row in connection.execute(select(table).order_by(*table.primary_key.columns))
            ]
            for table in TABLES
        }


def _export(engine: Engine) -> str:
    with Session(engine) as session:
        return "".join(records.export_lines(session))


def _found(session: Session) -> tuple[int, set[str]]:
    results = search.search(session, "buffer", limit=100)
    return results.total, {hit.record.id for hit in results.hits}


def _copy(source: str, target: str) -> str:
    result = CliRunner().invoke(cli, ["db", "copy", "--from", source, "--to", target])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_copy_there_and_back_is_the_same_store(settings: Settings, tmp_path: Path) -> None:
    """Through the other engine when PostgreSQL is at hand, else SQLite to SQLite."""
    original = open_store(settings)
    _fill(original, tmp_path)
    before, exported = _tables(original), _export(original)
    with Session(original) as session:
        version = records.dataset_version(session)
        found = _found(session)
    assert before["record_aliases"]
    assert before["reproducer_runs"]
    assert before["hits"]
    assert any(row[-1] for row in before["record_locations"])  # code context came along
    back = f"sqlite:///{tmp_path / 'back.db'}"
    with postgres.other_store(settings.database_url, tmp_path) as middle:
        output = _copy(settings.database_url, middle)
        assert f"records {len(before['records'])}," in output
        _copy(middle, back)
        for url in (middle, back):
            copy = open_store(settings.model_copy(update={"database_url": url}))
            assert _export(copy) == exported
            assert _tables(copy) == before
            with Session(copy) as session:
                assert records.dataset_version(session) == version
                assert _found(session) == found
                # The copy goes on: new rows take ids after the copied ones.
                drift.store_drift(session, drift.DriftOutcome(SEED, "vllm", "1", "same", 1, ""))
                session.commit()


def test_a_target_holding_records_is_refused(settings: Settings, tmp_path: Path) -> None:
    with unit_of_work(open_store(settings)) as session:
        assert records.import_paths(session, [DATA_DIR]).written
    other = f"sqlite:///{tmp_path / 'other.db'}"
    with unit_of_work(open_store(settings.model_copy(update={"database_url": other}))) as session:
        assert records.import_paths(session, [DATA_DIR / f"{SEED}.json"]).written
    result = CliRunner().invoke(cli, ["db", "copy", "--from", settings.database_url, "--to", other])
    assert result.exit_code == 2
    assert "not empty: records has rows" in result.output
    same = CliRunner().invoke(cli, ["db", "copy", "--from", other, "--to", other])
    assert same.exit_code == 2
    assert "same store" in same.output
